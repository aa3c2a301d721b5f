package portico_test

import (
	"context"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// tag returns a middleware that prints its name on the way in and out.
func tag(name string) portico.Middleware {
	return func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			fmt.Println("enter", name)
			resp, err := next.Generate(ctx, req)
			fmt.Println("leave", name)
			return resp, err
		})
	}
}

// Chain puts its first middleware outermost: the request passes the layers in
// the order they are written.
func ExampleChain() {
	base := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		fmt.Println("model answers")
		return &portico.Response{Text: "hi", FinishReason: portico.FinishStop}, nil
	})
	m := portico.Chain(base, tag("trace"), tag("ratelimit"), tag("retry"))
	resp, _ := m.Generate(context.Background(), &portico.Request{
		Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")},
	})
	fmt.Println(resp.Text)
	// Output:
	// enter trace
	// enter ratelimit
	// enter retry
	// model answers
	// leave retry
	// leave ratelimit
	// leave trace
	// hi
}

// ClassOf classifies any error; the layers act on the class alone.
func ExampleClassOf() {
	err := fmt.Errorf("calling model: %w", &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: 2e9})
	fmt.Println(portico.ClassOf(err), portico.RetryAfterOf(err))
	fmt.Println(portico.ClassOf(context.Canceled), portico.ClassOf(fmt.Errorf("unknown")))
	// Output:
	// rate_limited 2s
	// canceled permanent
}

// httpStatus maps an error to the status a service answers its own caller
// with, by who refused: the tenant's plan is the caller's business (429),
// the service's or a provider's saturation is not (503).
func httpStatus(err error) int {
	switch portico.RefuserOf(err) {
	case portico.ClientLimit, portico.SpendBudget:
		return 429 // your plan: slow down
	case portico.RouteLimit, portico.CircuitBreaker, portico.Cooldown, portico.Throttle, portico.RetryBudget:
		return 503 // we are saturated: try later
	}
	switch portico.ClassOf(err) {
	case portico.OK:
		return 200
	case portico.Permanent:
		return 400
	}
	return 502
}

// RefuserOf tells a refusal of the tenant's limiter from one of the
// route's (the provider account's), so that a service answers "your plan"
// with 429 and "we are saturated" with 503 without reading messages.
func ExampleRefuserOf() {
	// Each tenant may send one request an hour; the provider account
	// behind the route takes two.
	client, _ := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: time.Hour},
		Key: ratelimit.ByClient, RefusedBy: portico.ClientLimit})
	route, _ := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Requests: 2, Period: time.Hour},
		Key: ratelimit.ByModel, RefusedBy: portico.RouteLimit})
	provider := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "hi", FinishReason: portico.FinishStop}, nil
	})
	m := portico.Chain(provider, client.Wrap, route.Wrap)
	for _, tenant := range []string{"a", "a", "b", "c"} {
		req := &portico.Request{Model: "gpt", Identity: portico.Identity{ClientKey: tenant},
			Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}}
		_, err := m.Generate(context.Background(), req)
		if err != nil {
			// The text says it too: "portico: rate_limited by client_limit
			// model gpt retry-after 1h0m0s: rate limit: requests".
			fmt.Println(tenant, httpStatus(err), portico.ClassOf(err), "by", portico.RefuserOf(err))
			continue
		}
		fmt.Println(tenant, httpStatus(err))
	}
	// Output:
	// a 200
	// a 429 rate_limited by client_limit
	// b 200
	// c 503 rate_limited by route_limit
}
