package stack_test

import (
	"context"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
	"github.com/portico-llm/portico/throttle"
)

// A primary that is down and a fallback from another provider: the primary's
// retry layer gives up after one attempt here, the group moves on, and the answer
// says which route gave it and why the first was left.
func Example() {
	primary := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
	secondary := modeltest.NewFake(modeltest.Answer("Paris."))
	s, err := stack.New(stack.Config{
		Routes: []stack.Route{
			{
				Route: portico.Route{Name: "primary", Model: primary, Capabilities: portico.Capabilities{Provider: "openai"}},
				Retry: retry.Config{MaxAttempts: 1},
			},
			{Route: portico.Route{Name: "secondary", Model: secondary, Capabilities: portico.Capabilities{Provider: "azure"}}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := s.Generate(context.Background(), &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, "Capital of France?")},
		MaxOutputTokens: 16,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text, "from", resp.Route)
	for _, h := range resp.Hops {
		fmt.Println("left", h.Route, "because", h.Reason)
	}
	// Output:
	// Paris. from secondary
	// left primary because transient
}

// A route whose Order moves its throttle outside retry: the throttle then
// counts each call once, not each attempt. The other layers, the route's
// own middleware included, keep Recipe's order.
func ExampleRecipe() {
	down := modeltest.Fail(modeltest.StatusError(503))
	model := modeltest.NewFake(down, modeltest.Answer("Paris."))
	s, err := stack.New(stack.Config{Routes: []stack.Route{{
		Route:    portico.Route{Name: "primary", Model: model},
		Retry:    retry.Config{Backoff: retry.Backoff{BaseDelay: time.Millisecond}},
		Throttle: &throttle.Config{},
		Order: func(l stack.Layers) []portico.Middleware {
			breaker, throttle := l.Breaker, l.Throttle // Recipe puts the throttle inside Validate
			l.Breaker = func(m portico.Model) portico.Model { return portico.Chain(m, breaker, throttle) }
			l.Throttle = nil // a nil layer is left out
			return stack.Recipe(l)
		},
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := s.Generate(context.Background(), &portico.Request{
		Messages: []portico.Message{portico.Text(portico.RoleUser, "Capital of France?")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, requests, accepts := s.Throttle("primary").Probability()
	fmt.Println(resp.Text, "after", model.Count(), "attempts")
	fmt.Println("throttle counted", requests, "request,", accepts, "accepted")
	// Output:
	// Paris. after 2 attempts
	// throttle counted 1 request, 1 accepted
}
