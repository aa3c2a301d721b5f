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
// a reset 20 hours away slows the key to its own rate for those 20 hours
// when MaxProviderHold allows it;
// SetLimit, the operator's word, clears that view at once, for both buckets:
// the level stays where it was and refills at the configured rate.
func TestSetLimitClearsProviderView(t *testing.T) {
	const reset = 20 * time.Hour // 72,000 s
	t.Run("tokens", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Configured 1000 tokens/s, b = 10,000. The provider: 0 of 9,000
			// left, full in 20h: 0.125 tokens/s.
			lim := Limits{Tokens: 60000, TokenBurst: 10000}
			l := mustNew(t, Config{Limits: lim, Key: ByModel, Estimator: fixedEstimator(0), MaxProviderHold: 24 * time.Hour})
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
			l := mustNew(t, Config{Limits: Limits{Requests: 600, RequestBurst: 10}, Key: ByModel, MaxProviderHold: 24 * time.Hour})
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

// TestMaxProviderHold: a provider's announced reset holds a key tighter than
// configured for at most MaxProviderHold (one minute by default), after which
// the configured rate refills what the provider's view left.
func TestMaxProviderHold(t *testing.T) {
	// Configured 1000 tokens/s, b = 10,000. The provider: 0 of 36,000 left,
	// full in 20h: 0.5 tokens/s. Each call reserves and uses 1030 tokens.
	rl := &portico.RateLimit{Tokens: portico.Quota{Known: true, Limit: 36000, Remaining: 0, Reset: 20 * time.Hour}}
	for _, tt := range []struct {
		name  string
		hold  time.Duration // Config.MaxProviderHold
		wait  time.Duration // for 1030 tokens from level 0
		level float64       // 10s after the second call
	}{
		// 60s at 0.5/s give 30 tokens, the other 1000 take 1s at 1000/s;
		// from level 0, 10s at 1000/s fill the bucket.
		{"default", 0, 61 * time.Second, 10000},
		// 10s at 0.5/s give 5 tokens, the other 1025 take 1.025s.
		{"10s", 10 * time.Second, 11025 * time.Millisecond, 10000},
		// A hold longer than the reset follows it: 1030 tokens at 0.5/s,
		// and the next 10s still at 0.5/s.
		{"a day", 24 * time.Hour, 2060 * time.Second, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, Config{Limits: Limits{Tokens: 60000, TokenBurst: 10000}, Key: ByModel, Estimator: fixedEstimator(0), MaxProviderHold: tt.hold})
				m := l.Wrap(announcing(rl, 1030))
				r := req("a", 1030)
				if _, err := m.Generate(t.Context(), r); err != nil {
					t.Fatal(err)
				}
				wantRetryAfter(t, "after the announcement", m, r, tt.wait)
				time.Sleep(tt.wait - time.Millisecond)
				wantRetryAfter(t, "1ms early", m, r, time.Millisecond)
				time.Sleep(time.Millisecond)
				if _, err := m.Generate(t.Context(), r); err != nil {
					t.Fatalf("at %v: %v, want admitted", tt.wait, err)
				}
				time.Sleep(10 * time.Second)
				if got := l.levelOf(r, time.Now()); got != tt.level {
					t.Errorf("level 10s later = %v, want %v", got, tt.level)
				}
			})
		})
	}
}
