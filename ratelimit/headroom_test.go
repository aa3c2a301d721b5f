package ratelimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestHeadroom: Headroom is 1 for a key not yet seen, and otherwise the
// tightest bucket's level over its capacity, lowered by the provider's
// headers, refilled with time, and read without taking anything.
func TestHeadroom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 600 requests/min (10/s), b = 100; 60,000 tokens/min, b = 10,000.
		l := mustNew(t, Config{Limits: Limits{Requests: 600, RequestBurst: 100, Tokens: 60000, TokenBurst: 10000}, Key: ByModel, Estimator: fixedEstimator(100)})
		r := req("a", 900)
		if got := l.Headroom(r); got != 1 || l.Keys() != 0 {
			t.Fatalf("unseen key: Headroom %v, %d keys; want 1 and no key made", got, l.Keys())
		}
		m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			// The provider: 2,500 of 100,000 tokens remain, 50 of 1,000 requests.
			return &portico.Response{Usage: portico.Usage{InputTokens: 100, OutputTokens: 900}, RateLimit: &portico.RateLimit{
				Tokens:   portico.Quota{Known: true, Limit: 100000, Remaining: 2500, Reset: time.Minute},
				Requests: portico.Quota{Known: true, Limit: 1000, Remaining: 50, Reset: time.Minute}}}, nil
		}))
		if _, err := m.Generate(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		// Tokens 2,500/10,000 = 0.25 is tighter than requests 50/100 = 0.5.
		for range 3 {
			if got := l.Headroom(r); got != 0.25 {
				t.Fatalf("after the headers: Headroom %v, want 0.25 (reading takes nothing)", got)
			}
		}
		time.Sleep(time.Hour)
		if got := l.Headroom(r); got != 1 {
			t.Errorf("an hour later: Headroom %v, want 1", got)
		}
		if got := l.Headroom(nil); got != 1 {
			t.Errorf("Headroom(nil) = %v, want 1", got)
		}
	})
}
