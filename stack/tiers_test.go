package stack

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// TestClientTiers: the preset's client limiter gives each client its
// tier's limits: in one minute a free client is refused at its 11th call
// (RetryAfter 6 s) while a pro client passes 600 and a client with no
// plan the default 100. The default MaxOutputTokens fits the smallest
// tier's token bucket (half its 200), so New accepts a free tier whose
// bucket the stack's 1024 would not fit; tiers without default Limits are
// an error.
func TestClientTiers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 1, OutputTokens: 1}}
		m := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return ok, nil })
		plan := map[string]string{"f": "free", "p": "pro"}
		tier := func(r *portico.Request) string { return plan[r.Identity.ClientKey] }
		s, err := New(Config{
			Routes: []Route{route("a", m)},
			Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 100}, Tier: tier,
				Tiers: map[string]ratelimit.Limits{"free": {Requests: 10, Tokens: 200}, "pro": {Requests: 600}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			client string
			n      int
			retry  time.Duration
		}{{"f", 10, 6 * time.Second}, {"p", 600, 100 * time.Millisecond}, {"d", 100, 600 * time.Millisecond}} {
			r := hello.Clone()
			r.Identity.ClientKey = tc.client
			r.MaxOutputTokens = 0 // the default, 100
			for i := range tc.n {
				if _, err := s.Generate(t.Context(), r); err != nil {
					t.Fatalf("%s's call %d: %v", tc.client, i+1, err)
				}
			}
			_, err := s.Generate(t.Context(), r)
			if !errors.Is(err, ratelimit.ErrLimited) || portico.RetryAfterOf(err) != tc.retry {
				t.Errorf("%s's call %d = %v (RetryAfter %v), want ErrLimited after %v", tc.client, tc.n+1, err, portico.RetryAfterOf(err), tc.retry)
			}
		}
		_, err = New(Config{Routes: []Route{route("a", m)}, Client: &ratelimit.Config{Tier: tier, Tiers: map[string]ratelimit.Limits{"free": {Requests: 10}}}})
		if want := "stack: Config.Client: ratelimit: no limit: set Limits.Requests, Tokens or MaxInFlight, or Config.Concurrency"; err == nil || err.Error() != want {
			t.Errorf("New with Tiers and no Limits = %v, want %q", err, want)
		}
	})
}
