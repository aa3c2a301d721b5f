package ratelimit_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// A token bucket of 1,000 tokens per minute: a call reserves its input
// estimate plus its max output, gets back what it did not use, and a call
// that cannot be admitted now learns exactly when it could be.
func Example() {
	lim, err := ratelimit.New(ratelimit.Config{
		Limits:    ratelimit.Limits{Tokens: 1000},
		Estimator: portico.EstimatorFunc(func(*portico.Request) int { return 100 }),
	})
	if err != nil {
		panic(err)
	}
	model := lim.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 100, OutputTokens: 300}}, nil
	}))
	req := &portico.Request{Model: "m", MaxOutputTokens: 500, Identity: portico.Identity{ClientKey: "alice"}}

	// Reserves 600, uses 400: 600 tokens remain.
	_, err = model.Generate(context.Background(), req)
	fmt.Println("first:", err)

	// Needs 600 of 600: admitted; 200 remain.
	_, err = model.Generate(context.Background(), req)
	fmt.Println("second:", err)

	// Needs 600 of 200: the 400 missing take 24s at 1000/min.
	_, err = model.Generate(context.Background(), req)
	fmt.Println("third:", errors.Is(err, ratelimit.ErrLimited), portico.ClassOf(err), portico.RetryAfterOf(err).Round(1e9))

	// Another client has its own bucket.
	bob := req.Clone()
	bob.Identity.ClientKey = "bob"
	_, err = model.Generate(context.Background(), bob)
	fmt.Println("bob:", err)

	// Never admissible: 100 + 5000 > 1000.
	big := req.Clone()
	big.MaxOutputTokens = 5000
	_, err = model.Generate(context.Background(), big)
	var ce *ratelimit.CapacityError
	fmt.Println("big:", errors.As(err, &ce), portico.ClassOf(err), ce.Input, ce.MaxOutput, ce.Capacity)
	// Output:
	// first: <nil>
	// second: <nil>
	// third: true rate_limited 24s
	// bob: <nil>
	// big: true incompatible 100 5000 1000
}

// Plans per tenant through one Limiter: free tenants get 3 requests a
// minute, pro tenants 100, tenants without a plan the default 10.
func ExampleConfig_tiers() {
	plan := map[string]string{"alice": "free", "bob": "pro"}
	lim, err := ratelimit.New(ratelimit.Config{
		Limits: ratelimit.Limits{Requests: 10},
		Key:    ratelimit.ByClient,
		Tier:   func(r *portico.Request) string { return plan[r.Identity.ClientKey] },
		Tiers: map[string]ratelimit.Limits{
			"free": {Requests: 3},
			"pro":  {Requests: 100},
		},
	})
	if err != nil {
		panic(err)
	}
	model := lim.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok"}, nil
	}))
	for _, tenant := range []string{"alice", "bob", "carol"} {
		req := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: tenant}}
		n := 0
		for ; n < 1000; n++ {
			if _, err = model.Generate(context.Background(), req); err != nil {
				break
			}
		}
		fmt.Println(tenant, n, portico.RetryAfterOf(err).Round(1e8))
	}
	// Output:
	// alice 3 20s
	// bob 100 600ms
	// carol 10 6s
}
