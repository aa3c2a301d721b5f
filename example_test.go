package portico_test

import (
	"context"
	"fmt"

	"github.com/portico-llm/portico"
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
