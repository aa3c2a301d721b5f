package ratelimit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// announcing returns a model whose first answer carries rl (the provider's
// view of its limits) and whose every answer reports usage equal to the
// reservation of a call of maxOut tokens with no input, so nothing is
// refunded or charged.
func announcing(rl *portico.RateLimit, maxOut int) portico.Model {
	first := true
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		resp := &portico.Response{Usage: portico.Usage{OutputTokens: maxOut}}
		if first {
			resp.RateLimit, first = rl, false
		}
		return resp, nil
	})
}

// wantRetryAfter checks that m refuses r with ErrLimited and RetryAfter want.
func wantRetryAfter(t *testing.T, what string, m portico.Model, r *portico.Request, want time.Duration) {
	t.Helper()
	_, err := m.Generate(t.Context(), r)
	if got := portico.RetryAfterOf(err); !errors.Is(err, ErrLimited) || got != want {
		t.Fatalf("%s: Generate = %v (RetryAfter %v), want ErrLimited with RetryAfter %v", what, err, got, want)
	}
}

// TestSetLimitClearsProviderView: a provider that announces nothing left and
// a reset 20 hours away slows the key to its own rate for those 20 hours;
// SetLimit, the operator's word, clears that view at once, for both buckets:
// the level stays where it was and refills at the configured rate.
func TestSetLimitClearsProviderView(t *testing.T) {
	const reset = 20 * time.Hour // 72,000 s
	t.Run("tokens", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Configured 1000 tokens/s, b = 10,000. The provider: 0 of 9,000
			// left, full in 20h: 0.125 tokens/s.
			lim := Limits{Tokens: 60000, TokenBurst: 10000}
			l := mustNew(t, Config{Limits: lim, Key: ByModel, Estimator: fixedEstimator(0)})
			m := l.Wrap(announcing(&portico.RateLimit{Tokens: portico.Quota{Known: true, Limit: 9000, Remaining: 0, Reset: reset}}, 1000))
			r := req("a", 1000)
			if _, err := m.Generate(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			// 1000 tokens at 0.125/s.
			wantRetryAfter(t, "before SetLimit", m, r, 8000*time.Second)
			if err := l.SetLimit(lim); err != nil {
				t.Fatal(err)
			}
			// Level 0, 1000 tokens at the configured 1000/s.
			wantRetryAfter(t, "after SetLimit", m, r, time.Second)
			time.Sleep(time.Second - time.Millisecond)
			wantRetryAfter(t, "1ms early", m, r, time.Millisecond)
			time.Sleep(time.Millisecond)
			if _, err := m.Generate(t.Context(), r); err != nil {
				t.Fatalf("1s after SetLimit: %v, want admitted", err)
			}
			time.Sleep(10 * time.Second)
			if got := l.levelOf(r, time.Now()); got != 10000 {
				t.Errorf("level 11s after SetLimit = %v, want 10000 (full at the configured rate)", got)
			}
		})
	})
	t.Run("requests", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Configured 10 requests/s, burst 10. The provider: 0 of 1,125
			// left, full in 20h: 1/64 requests per second.
			l := mustNew(t, Config{Limits: Limits{Requests: 600, RequestBurst: 10}, Key: ByModel})
			m := l.Wrap(announcing(&portico.RateLimit{Requests: portico.Quota{Known: true, Limit: 1125, Remaining: 0, Reset: reset}}, 1))
			r := req("a", 1)
			if _, err := m.Generate(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			wantRetryAfter(t, "before SetLimit", m, r, 64*time.Second)
			// The operator raises the limit to 20 requests/s.
			if err := l.SetLimit(Limits{Requests: 1200, RequestBurst: 10}); err != nil {
				t.Fatal(err)
			}
			wantRetryAfter(t, "after SetLimit", m, r, 50*time.Millisecond)
			time.Sleep(50 * time.Millisecond)
			if _, err := m.Generate(t.Context(), r); err != nil {
				t.Fatalf("50ms after SetLimit: %v, want admitted", err)
			}
		})
	})
}
