package throttle_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/throttle"
)

// A destination that refuses every request: after the first 10 refusals the
// client refuses the rest itself, without calling it, but for one call in
// 10 (the cap, 0.9) that keeps probing it.
func Example() {
	overloaded := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
	i := 0
	draws := func() float64 { i++; return float64(i%10) / 10 } // 0.1, 0.2, ..., 0.9, 0: for the example
	th := throttle.MustNew(throttle.Config{Rand: draws})
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
	// sent 19, throttled 81
	// window: 19 requests, 0 accepts, p = 0.900
}
