package adaptive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// A route's limiter whose in-flight cap is an AIMD limit: the destination
// answers 429 to the first five calls, and the limit halves at each.
func Example() {
	lim := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{Backoff: 0.5}, Initial: 32, Window: 1})
	rl, err := ratelimit.New(ratelimit.Config{Concurrency: lim, Key: ratelimit.ByModel})
	if err != nil {
		panic(err)
	}
	provider := modeltest.NewFakeFunc(func(n int, _ *portico.Request) modeltest.Outcome {
		if n < 5 {
			return modeltest.Fail(modeltest.RateLimitError(time.Second))
		}
		return modeltest.Answer("ok")
	})
	m := rl.Wrap(provider)
	req := &portico.Request{Model: "gpt", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
	for range 6 {
		m.Generate(context.Background(), req)
		fmt.Print(lim.Limit(), " ")
	}
	fmt.Println()
	// Output: 16 8 4 2 1 2
}
