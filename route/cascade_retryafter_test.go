package route

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// TestCascadeExhaustedKeepsRetryAfter: a cascade whose steps were all rate
// limited says when to come back, as a fallback group does: the least of
// the steps' Retry-After hints, and of an unavailable step's Health.
func TestCascadeExhaustedKeepsRetryAfter(t *testing.T) {
	accept := func(*portico.Request, *portico.Response) float64 { return 1 }
	limited := func(d time.Duration) portico.Model {
		return modeltest.NewFake(modeltest.Fail(modeltest.RateLimitError(d)))
	}
	open := &switchHealth{}
	open.down.Store(true)
	open.wait.Store(int64(3 * time.Second))
	for _, tc := range []struct {
		name  string
		steps []Step
		want  time.Duration
	}{
		{"every step rate limited", []Step{
			{Route: portico.Route{Name: "a", Model: limited(5 * time.Second)}, Accept: accept, Threshold: 0.5},
			{Route: portico.Route{Name: "b", Model: limited(2 * time.Second)}},
		}, 2 * time.Second},
		{"rate limited, then an open breaker", []Step{
			{Route: portico.Route{Name: "a", Model: limited(5 * time.Second)}, Accept: accept, Threshold: 0.5},
			{Route: portico.Route{Name: "b", Model: answer("x", portico.Usage{}, nil), Health: open}},
		}, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCascade(CascadeConfig{Steps: tc.steps})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Generate(context.Background(), userReq("hi"))
			if !errors.Is(err, ErrExhausted) || portico.ClassOf(err) != portico.RateLimited {
				t.Fatalf("err = %v; want a rate_limited error wrapping ErrExhausted", err)
			}
			if got := portico.RetryAfterOf(err); got != tc.want {
				t.Errorf("RetryAfterOf(err) = %v, want %v", got, tc.want)
			}
		})
	}
}
