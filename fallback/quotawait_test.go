package fallback

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestSharedQuotaWaitsAsOneRoute: two routes of one Quota and no other.
// The first answers 429 with a Retry-After; under a deadline another
// candidate followed, so it was told not to wait in place, and its
// Retry-After cooled the whole quota down. The candidate left cannot
// serve before the Retry-After either: the group waits for it, as the
// first route alone would have waited in place, and answers when it ends
// (it failed at once, with the hint, though the deadline had room). A
// Retry-After the deadline cannot fit, or a request without a deadline
// (whose route was never told not to wait), fails at once with the hint.
func TestSharedQuotaWaitsAsOneRoute(t *testing.T) {
	quota := portico.Capabilities{Quota: "key-1"}
	for _, c := range []struct {
		name       string
		deadline   time.Duration // 0: none
		retryAfter time.Duration
		took       time.Duration // when the group answered or failed
		route      string        // "": it fails
	}{
		{"fits the deadline", 8 * time.Second, 2 * time.Second, 2 * time.Second, "b"},
		{"past the deadline", 8 * time.Second, 10 * time.Second, 0, ""},
		{"no room for the attempt", 8 * time.Second, 7900 * time.Millisecond, 0, ""},
		{"no deadline", 0, 2 * time.Second, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := &fake{name: "a", err: limited(c.retryAfter)}, &fake{name: "b"}
				g := MustNew(Config{Routes: []portico.Route{route(a, quota), route(b, quota)}})
				ctx := context.Background()
				if c.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.deadline)
					defer cancel()
				}
				t0 := time.Now()
				resp, err := g.Generate(ctx, simple)
				took := time.Since(t0)
				if c.route != "" {
					if err != nil || resp.Route != c.route || !eq(hopsOf(t, resp.Hops), []string{"a:rate_limited:rate_limited"}) || took != c.took {
						t.Fatalf("Generate = %v, %v after %v; want %s's answer after a's 429, at %v", resp, err, took, c.route, c.took)
					}
				} else if portico.ClassOf(err) != portico.RateLimited || portico.RetryAfterOf(err) != c.retryAfter || took != 0 {
					t.Fatalf("Generate = %v, %v (retry-after %v) after %v; want RateLimited with the %v hint at once", resp, err, portico.RetryAfterOf(err), took, c.retryAfter)
				}
				wantB := 0
				if c.route != "" {
					wantB = 1
				}
				if a.n() != 1 || b.n() != wantB {
					t.Errorf("calls a %d b %d, want 1 and %d", a.n(), b.n(), wantB)
				}
			})
		})
	}
}
