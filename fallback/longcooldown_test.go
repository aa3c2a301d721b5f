package fallback

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestRetryAfterCooldownIsBounded: a route's cooldown is the Retry-After
// its failure carried, with no upper bound but the adapters' 24 h clamp.
// One 503 or 429 with "Retry-After: 86400" (a misconfigured proxy or
// gateway, an OpenAI-compatible server, a CDN error page) takes the route
// out of the group for a day; with a shared Cooldowns (redisstore) one
// instance's single answer takes it out of every instance for a day
// (seen: a 503 with Retry-After of 100 h on one of 4 stacks gave
// portico:cd:{k=} a TTL of 23h59m and every instance Until(openai) = 24 h),
// and the set's ZADD GT means no later, shorter hint or recovery lowers
// it. The retry layer treats 60 s (retry.DefaultMaxRetryAfter) as the
// longest hint worth honouring; a cooldown should have a bound of the
// same kind (a Config field, say), after which the route is tried again.
func TestRetryAfterCooldownIsBounded(t *testing.T) {
	t.Skip("bug: a single Retry-After of up to 24 h cools a route for 24 h (fleet-wide with redisstore), no cap, never lowered")
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: limited(24 * time.Hour)}, &fake{name: "b"}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		if resp, err := g.Generate(context.Background(), simple); err != nil || resp.Route != "b" {
			t.Fatalf("Generate = %v, %v; want b's answer after a's 429", resp, err)
		}
		a.set(nil)
		time.Sleep(time.Hour)
		resp, err := g.Generate(context.Background(), simple)
		if err != nil || resp.Route != "a" {
			t.Errorf("an hour after one 429 with Retry-After 24h: Generate = %v, %v, a called %d times; want a tried again", resp, err, a.n())
		}
	})
}
