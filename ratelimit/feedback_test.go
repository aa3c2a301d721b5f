package ratelimit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestProviderFeedback: a 429 carrying the provider's remaining tokens and
// reset makes the next call wait locally instead of collecting another 429.
func TestProviderFeedback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Configured: 60,000 tokens/min (1000/s), b = 10,000, keyed by model.
		l := mustNew(t, Config{Limits: Limits{Tokens: 60000, TokenBurst: 10000}, Key: ByModel, Estimator: fixedEstimator(100)})
		providerCalls := 0
		m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			providerCalls++
			if providerCalls == 1 {
				// The provider says: 0 of 6,000 tokens remain, full again in 12s
				// (500 tokens/s), tighter than our 1000/s.
				return nil, &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: time.Second,
					RateLimit: &portico.RateLimit{Tokens: portico.Quota{Known: true, Limit: 6000, Remaining: 0, Reset: 12 * time.Second}}}
			}
			return &portico.Response{Usage: portico.Usage{InputTokens: 100, OutputTokens: 900}}, nil
		}))
		r := req("a", 900)
		if _, err := m.Generate(t.Context(), r); !errors.Is(err, portico.ErrRateLimited) {
			t.Fatalf("first call = %v, want the provider's 429", err)
		}
		// 1000 tokens at the provider's 500/s: 2s, where our own view would
		// have admitted at once.
		_, err := m.Generate(t.Context(), req("b", 900))
		if !errors.Is(err, ErrLimited) || portico.RetryAfterOf(err) != 2*time.Second {
			t.Fatalf("call after the 429 = %v, want local ErrLimited with RetryAfter 2s", err)
		}
		if providerCalls != 1 {
			t.Errorf("provider called %d times, want 1: the second call must wait locally", providerCalls)
		}
		time.Sleep(2 * time.Second)
		if _, err := m.Generate(t.Context(), r); err != nil {
			t.Fatalf("after 2s: %v, want admitted", err)
		}
		// After the reset (12s) the configured rate is back: the level is at
		// most b and refills at 1000/s.
		time.Sleep(20 * time.Second)
		if got := l.levelOf(r, time.Now()); got != 10000 {
			t.Errorf("level 20s after reset = %v, want 10000", got)
		}
	})
}

// TestProviderFeedbackRequests: the request bucket adopts remaining requests.
func TestProviderFeedbackRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Configured: 600 requests/min (10/s), burst 100.
		l := mustNew(t, Config{Limits: Limits{Requests: 600, RequestBurst: 100}, Key: ByModel})
		rl := &portico.RateLimit{Requests: portico.Quota{Known: true, Limit: 100, Remaining: 2, Reset: 49 * time.Second}}
		m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			return &portico.Response{RateLimit: rl}, nil
		}))
		r := req("a", 1)
		m.Generate(t.Context(), r)
		// The provider has 2 left and refills at 98/49s = 2/s: two calls pass,
		// the third waits 0.5s.
		for i := range 2 {
			if _, err := m.Generate(t.Context(), r); err != nil {
				t.Fatalf("call %d within the provider's remaining: %v", i, err)
			}
			rl = nil
		}
		_, err := m.Generate(t.Context(), r)
		if !errors.Is(err, ErrLimited) || portico.RetryAfterOf(err) != 500*time.Millisecond {
			t.Fatalf("third call = %v, want ErrLimited with RetryAfter 500ms", err)
		}
		// After the reset the configured 10/s applies again.
		time.Sleep(60 * time.Second)
		for i := range 100 {
			if _, err := m.Generate(t.Context(), r); err != nil {
				t.Fatalf("call %d of the burst after the reset: %v", i, err)
			}
		}
		if _, err := m.Generate(t.Context(), r); portico.RetryAfterOf(err) != 100*time.Millisecond {
			t.Errorf("after the burst: %v, want RetryAfter 100ms (10/s)", err)
		}
	})
}

func TestSetLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 6000, TokenBurst: 1000}, Estimator: fixedEstimator(0)})
		m := l.Wrap(okModel(0, 500))
		r := req("a", 500)
		m.Generate(t.Context(), r) // level 500
		if err := l.SetLimit(Limits{Tokens: 600, TokenBurst: 400}); err != nil {
			t.Fatal(err)
		}
		if got := l.levelOf(r, time.Now()); got != 400 {
			t.Errorf("level after lowering the burst to 400 = %v, want 400", got)
		}
		if _, err := m.Generate(t.Context(), r); !errors.Is(err, ErrOverCapacity) {
			t.Errorf("500 tokens after the burst fell to 400 = %v, want ErrOverCapacity", err)
		}
		if _, err := m.Generate(t.Context(), req("a", 400)); err != nil {
			t.Fatalf("400 tokens: %v", err)
		}
		_, err := m.Generate(t.Context(), req("a", 100))
		// The model used 500 against 400 reserved: level -100, so 100 tokens
		// need 200 at the new 10/s.
		if portico.RetryAfterOf(err) != 20*time.Second {
			t.Errorf("after SetLimit(600/min): %v, want RetryAfter 20s (200 tokens at 10/s)", err)
		}
		if err := l.SetLimit(Limits{}); err == nil {
			t.Errorf("SetLimit(no limit) = nil, want an error")
		}
		if err := l.SetLimit(Limits{Tokens: -1}); err == nil {
			t.Errorf("SetLimit(negative) = nil, want an error")
		}
	})
}

// TestProviderFeedbackInputOutput: quotas on input or output tokens alone
// (Anthropic's ITPM and OTPM) hold the input-plus-output bucket at the share
// of its burst they have left; a lopsided split that is not used does not
// cap calls at the smaller part, and an exhausted part empties the bucket.
func TestProviderFeedbackInputOutput(t *testing.T) {
	q := func(limit, remaining int) portico.Quota {
		return portico.Quota{Known: true, Limit: limit, Remaining: remaining, Reset: 30 * time.Second}
	}
	cases := []struct {
		name  string
		rl    portico.RateLimit
		level float64 // after one call of 100 + 900 tokens
	}{
		{"unused lopsided split", portico.RateLimit{Tokens: q(96000, 96000), InputTokens: q(80000, 80000), OutputTokens: q(16000, 16000)}, 95000},
		{"output a quarter left", portico.RateLimit{InputTokens: q(80000, 80000), OutputTokens: q(16000, 4000)}, 24000},
		{"input half left", portico.RateLimit{InputTokens: q(80000, 40000), OutputTokens: q(16000, 16000)}, 48000},
		{"output exhausted, no limit sent", portico.RateLimit{OutputTokens: portico.Quota{Known: true}}, 0},
		{"remaining above limit", portico.RateLimit{InputTokens: q(80000, 90000)}, 95000},
		{"unknown limit, some left", portico.RateLimit{InputTokens: portico.Quota{Known: true, Remaining: 5}}, 95000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// 96,000 tokens/min (1600/s), b = 96,000, keyed by model.
				l := mustNew(t, Config{Limits: Limits{Tokens: 96000}, Key: ByModel, Estimator: fixedEstimator(100)})
				rl := tc.rl
				m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
					return &portico.Response{Usage: portico.Usage{InputTokens: 100, OutputTokens: 900}, RateLimit: &rl}, nil
				}))
				r := req("a", 900)
				if _, err := m.Generate(t.Context(), r); err != nil {
					t.Fatal(err)
				}
				if got := l.levelOf(r, time.Now()); got != tc.level {
					t.Errorf("level after the provider's view = %v, want %v", got, tc.level)
				}
			})
		})
	}
	// An exhausted output quota makes the next call wait locally: 1000 tokens
	// at the configured 1600/s.
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 96000}, Key: ByModel, Estimator: fixedEstimator(100)})
		calls := 0
		m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			calls++
			return nil, &portico.Error{Class: portico.RateLimited, Status: 429,
				RateLimit: &portico.RateLimit{OutputTokens: q(16000, 0)}}
		}))
		m.Generate(t.Context(), req("a", 900))
		_, err := m.Generate(t.Context(), req("a", 900))
		if !errors.Is(err, ErrLimited) || portico.RetryAfterOf(err) != 625*time.Millisecond || calls != 1 {
			t.Errorf("call after an exhausted output quota = %v after %d provider calls, want local ErrLimited with RetryAfter 625ms after 1", err, calls)
		}
	})
}
