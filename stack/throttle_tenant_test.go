package stack

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/throttle"
)

// TestRequestModelDoesNotThrottleRoute: notServed makes a 404 for a model
// the request named Incompatible so that one tenant's model name does not
// take a route without a ModelName out for everyone. It sits just inside
// the breaker; the route's Throttle, inside validate, still sees the
// adapter's Unusable 404, a route fault, a request "not accepted": a
// tenant that names a model the route lacks drives the throttle's
// rejection probability towards 1, and every tenant's calls to the route
// are then refused locally (Rejected, ErrThrottled).
func TestRequestModelDoesNotThrottleRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		only := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			if req.Model != "" && req.Model != "claude-haiku-4-5" {
				return nil, modeltest.StatusError(404)
			}
			return &portico.Response{Text: "fine", FinishReason: portico.FinishStop}, nil
		})
		rc := route("anthropic", only)
		rc.Throttle = &throttle.Config{Rand: func() float64 { return 0.5 }}
		s, err := New(Config{Routes: []Route{rc}})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			req := hello.Clone()
			req.Model = "gpt-4o-mini"
			if _, err := s.Generate(context.Background(), req); portico.ClassOf(err) != portico.Incompatible {
				t.Fatalf("Generate(model gpt-4o-mini) = %v, want Incompatible", err)
			}
		}
		if p, reqs, acc := s.Throttle("anthropic").Probability(); p > 0 {
			t.Errorf("throttle after one tenant's requests for a model the route lacks: p = %.2f (%d requests, %d accepted), want 0", p, reqs, acc)
		}
		if _, err := s.Generate(context.Background(), hello); err != nil {
			t.Errorf("next request, no model named = %v; want the route's answer", err)
		}
	})
}
