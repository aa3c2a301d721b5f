package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
)

func answer(text string) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: text, FinishReason: portico.FinishStop}, nil
	})
}

func failing(c portico.Class) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: c}
	})
}

// The primary is down and its breaker open: it is skipped at once, a small
// route cannot take the request's context, and an independent route answers.
func Example() {
	br := breaker.MustNew(breaker.Config{Name: "primary", Trip: breaker.ConsecutiveFailures(1)})
	primary := br.Wrap(failing(portico.Transient))
	primary.Generate(context.Background(), &portico.Request{}) // trips the breaker

	g := fallback.MustNew(fallback.Config{
		Independence: fallback.OtherProvider,
		Routes: []portico.Route{
			{Name: "primary", Model: primary, Health: br, Capabilities: portico.Capabilities{Provider: "openai", ContextWindow: 128000}},
			{Name: "small", Model: answer("small"), Capabilities: portico.Capabilities{Provider: "vllm", ContextWindow: 4096}},
			{Name: "same-provider", Model: answer("same"), Capabilities: portico.Capabilities{Provider: "openai", ContextWindow: 128000}},
			{Name: "other", Model: answer("other"), Capabilities: portico.Capabilities{Provider: "anthropic", ContextWindow: 200000}},
		},
	})
	resp, _ := g.Generate(context.Background(), &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, "summarise this report")},
		MaxOutputTokens: 8000,
	})
	fmt.Println("answered by", resp.Route)
	for _, h := range resp.Hops {
		fmt.Println("left", h.Route, "-", h.Reason)
	}
	// Output:
	// answered by other
	// left primary - unavailable
	// left small - context window
	// left same-provider - not independent
}

// When every route fails the error is classified and lists every hop.
func Example_exhausted() {
	g := fallback.MustNew(fallback.Config{Routes: []portico.Route{
		{Name: "a", Model: failing(portico.RateLimited)},
		{Name: "b", Model: failing(portico.Transient)},
	}})
	_, err := g.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}})
	var ex *fallback.Exhausted
	fmt.Println(errors.Is(err, fallback.ErrExhausted), portico.ClassOf(err), errors.As(err, &ex), len(ex.Hops))
	fmt.Println(ex)
	// Output:
	// true transient true 2
	// fallback: every route failed: a (rate_limited), b (transient)
}

// A permanent client error ends the search at once: no other route can fix
// the request. The error keeps that route's class, and still says why the
// routes before it were left.
func Example_stopped() {
	g := fallback.MustNew(fallback.Config{Routes: []portico.Route{
		{Name: "a", Model: failing(portico.Transient)},
		{Name: "b", Model: failing(portico.Permanent)},
		{Name: "c", Model: answer("c")},
	}})
	_, err := g.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}})
	var ex *fallback.Exhausted
	fmt.Println(portico.ClassOf(err), errors.Is(err, fallback.ErrExhausted), errors.As(err, &ex), ex.Stopped)
	fmt.Println(ex)
	// Output:
	// permanent false true true
	// fallback: stopped at b after: a (transient)
}

// A route that answers 429 with Retry-After cools down until then: later
// requests skip it without a call, and so do routes that share its quota.
// (Under a deadline, its retry layer would also not wait for the hint in
// place, since another route follows: Config.WaitInPlace.)
func Example_cooldown() {
	limited := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: time.Minute}
	})
	key := portico.Capabilities{Quota: "azure-key-1"}
	g := fallback.MustNew(fallback.Config{Routes: []portico.Route{
		{Name: "eastus", Model: limited, Capabilities: key},
		{Name: "westus", Model: answer("westus"), Capabilities: key},
		{Name: "openai", Model: answer("openai")},
	}})
	for range 2 {
		resp, _ := g.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}})
		fmt.Print("answered by ", resp.Route, ", left")
		for _, h := range resp.Hops {
			fmt.Print(" ", h.Route, " (", h.Reason, ")")
		}
		fmt.Println()
	}
	// Output:
	// answered by openai, left eastus (rate_limited) westus (cooldown)
	// answered by openai, left eastus (cooldown) westus (cooldown)
}
