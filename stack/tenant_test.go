package stack

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
)

// TestRequestModelDoesNotOpenBreakers: routes of several providers, none
// with a ModelName, and a request that names its model (Request.Model, as
// callers set it). The primary fails once (503s); the group sends the
// primary's model name to the fallback, whose provider answers 404 model
// not found, which every adapter classifies Unusable, and the fallback's
// breaker opens at once: one tenant's request (or a typo in its model
// name) closes the fallback to every tenant for OpenFor (30 s), and with
// Route.Breaker.Shared to every instance. A model the request chose is
// the request's fault on that route, not the route's.
func TestRequestModelDoesNotOpenBreakers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// What provider/anthropic makes of a model it does not have: 404
		// not_found_error, Unusable.
		only := func(model string) portico.Model {
			return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
				if req.Model != "" && req.Model != model {
					return nil, modeltest.StatusError(404)
				}
				return &portico.Response{Text: "from " + model, FinishReason: portico.FinishStop, Model: model}, nil
			})
		}
		down := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		s, err := New(Config{Routes: []Route{route("openai", down), route("anthropic", only("claude-haiku-4-5"))}})
		if err != nil {
			t.Fatal(err)
		}
		req := hello.Clone()
		req.Model = "gpt-4o-mini"
		if _, err := s.Generate(context.Background(), req); portico.ClassOf(err) != portico.Transient {
			t.Fatalf("Generate(model gpt-4o-mini, openai down) = %v, want the primary's Transient", err)
		}
		if st := s.Breaker("anthropic").State(); st != breaker.Closed {
			t.Errorf("anthropic breaker after a request for gpt-4o-mini = %v, want closed", st)
		}
		resp, err := s.Generate(context.Background(), hello)
		if err != nil || resp.Route != "anthropic" {
			t.Errorf("next request, no model named = %+v, %v; want anthropic's answer", resp, err)
		}
	})
}

// TestShortCallerDeadlineKeepsBreakerClosed: a healthy route whose answers
// take 400 ms, the only one that fits the request (the other's context window
// is too small), and callers whose own deadlines (300 ms) are shorter. With
// no other candidate to leave time for, the group gives the route all but
// its reserve (300/16 ms) and ends it there with ErrShareTimeout, a layer
// timeout: the route reports Ambiguous and its breaker counts it. After five
// such requests the breaker opens, and every tenant, however patient, is
// refused for 30 s. Class.RouteFault says a deadline is never the route's
// fault; a cut that only the caller's deadline caused should not be one
// either. (With one route the stack calls it without a group, and the same
// requests end with Deadline, which the breaker ignores.)
func TestShortCallerDeadlineKeepsBreakerClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "fine", FinishReason: portico.FinishStop}, Latency: 400 * time.Millisecond})
		small := route("small", modeltest.NewFake(modeltest.Answer("unused")))
		small.Capabilities.ContextWindow = 8
		s, err := New(Config{Routes: []Route{route("a", slow), small}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			_, err := s.Generate(ctx, hello)
			cancel()
			if err == nil {
				t.Fatalf("request %d under 300 ms = nil error, want a failure", i)
			}
		}
		if st := s.Breaker("a").State(); st != breaker.Closed {
			t.Errorf("breaker of a healthy route after callers' short deadlines = %v, want closed", st)
		}
		resp, err := s.Generate(context.Background(), hello)
		if err != nil || resp.Route != "a" {
			t.Errorf("patient request = %+v, %v; want a's answer", resp, err)
		}
	})
}
