package fallback

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestRetryAfterCooldownIsBounded: one 429 with a Retry-After of 24 h (a
// misconfigured proxy or gateway, a CDN error page; with a shared
// Cooldowns it would reach every instance) cools the route for
// Config.MaxCooldown (5 min), not for a day: just before, the route is
// still skipped; after, it is called again and answers.
func TestRetryAfterCooldownIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: limited(24 * time.Hour)}, &fake{name: "b"}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		if resp, err := g.Generate(context.Background(), simple); err != nil || resp.Route != "b" {
			t.Fatalf("Generate = %v, %v; want b's answer after a's 429", resp, err)
		}
		a.set(nil)
		time.Sleep(DefaultMaxCooldown - time.Second)
		if resp, err := g.Generate(context.Background(), simple); err != nil || resp.Route != "b" || a.n() != 1 {
			t.Fatalf("1 s before the cooldown's end: Generate = %v, %v, a called %d times; want b's answer, a skipped", resp, err, a.n())
		}
		time.Sleep(time.Second)
		resp, err := g.Generate(context.Background(), simple)
		if err != nil || resp.Route != "a" {
			t.Errorf("5 min after one 429 with Retry-After 24h: Generate = %v, %v, a called %d times; want a tried again", resp, err, a.n())
		}
	})
}

// TestExhaustedRetryAfterIsBounded: both routes answer 429 with a
// Retry-After of 24 h. Each is cooled for MaxCooldown (5 min) and takes
// calls again then, so the exhausted group's RetryAfter, which says when
// the first route will, should be 5 min at most, not the day the hint said.
func TestExhaustedRetryAfterIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: limited(24 * time.Hour)}, &fake{name: "b", err: limited(24 * time.Hour)}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		_, err := g.Generate(context.Background(), simple)
		if ra := portico.RetryAfterOf(err); portico.ClassOf(err) != portico.RateLimited || ra > DefaultMaxCooldown {
			t.Errorf("Generate, both routes 429 with Retry-After 24h = %v, RetryAfter %v; want RateLimited, RetryAfter at most %v", err, ra, DefaultMaxCooldown)
		}
		_, err = g.Generate(context.Background(), simple) // both skipped, cooling down
		if ra := portico.RetryAfterOf(err); ra > DefaultMaxCooldown {
			t.Errorf("Generate, both routes cooling = %v, RetryAfter %v; want at most %v", err, ra, DefaultMaxCooldown)
		}
	})
}
