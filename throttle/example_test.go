package throttle_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/throttle"
)

// A destination that refuses every request: after the first refusals the
// client refuses the rest itself, without calling it.
func Example() {
	overloaded := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
	th := throttle.MustNew(throttle.Config{Rand: func() float64 { return 0.9 }}) // a fixed draw, for the example
	m := th.Wrap(overloaded)
	req := &portico.Request{Model: "gpt", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
	throttled := 0
	for range 100 {
		if _, err := m.Generate(context.Background(), req); errors.Is(err, throttle.ErrThrottled) {
			throttled++
		}
	}
	p, requests, accepts := th.Probability()
	fmt.Printf("sent %d, throttled %d\n", overloaded.Count(), throttled)
	fmt.Printf("window: %d requests, %d accepts, p = %.3f\n", requests, accepts, p)
	// Output:
	// sent 10, throttled 90
	// window: 100 requests, 0 accepts, p = 0.990
}
