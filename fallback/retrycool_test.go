package fallback

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
)

// TestRetryInFlightHonoursCooldown: two requests on a primary with a retry
// layer. The first gets a 503 at 50 ms; the second a 429 with Retry-After
// 90 s at 20 ms, longer than its retry layer waits (60 s), so the group
// cools the primary down until 90.02 s and the secondary answers. The
// first request's retry, due 200 ms after its 503, reads the cooldown in
// its context, longer than the wait allowed in place (the group's 500 ms
// under a deadline, the retry layer's 60 s without): it ends at once and
// the group moves on to the secondary. The primary is called twice, never
// within its Retry-After: without the rule the retry called it at 250 ms.
func TestRetryInFlightHonoursCooldown(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline time.Duration
	}{{"under a deadline", 10 * time.Second}, {"no deadline", 0}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				primary := modeltest.NewFakeFunc(func(n int, _ *portico.Request) modeltest.Outcome {
					switch n {
					case 0:
						return modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 50 * time.Millisecond}
					case 1:
						return modeltest.Outcome{Err: modeltest.RateLimitError(90 * time.Second), Latency: 10 * time.Millisecond}
					}
					return modeltest.Answer("from primary")
				})
				r := retry.MustNew(retry.Config{Backoff: retry.Backoff{Schedule: retry.Exponential, BaseDelay: 200 * time.Millisecond}})
				g := MustNew(Config{Routes: []portico.Route{
					{Name: "primary", Model: r.Wrap(primary)},
					{Name: "secondary", Model: modeltest.NewFake(modeltest.Answer("from secondary"))},
				}})
				ctx := context.Background()
				if c.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.deadline)
					defer cancel()
				}
				start := time.Now()
				var wg sync.WaitGroup
				wg.Go(func() {
					resp, err := g.Generate(ctx, simple)
					if el := time.Since(start); err != nil || resp.Route != "secondary" || el != 50*time.Millisecond {
						t.Errorf("first request = %+v, %v after %v; want the secondary's answer after 50ms", resp, err, el)
					}
				})
				time.Sleep(10 * time.Millisecond)
				if resp, err := g.Generate(ctx, simple); err != nil || resp.Route != "secondary" {
					t.Errorf("second request = %+v, %v; want the secondary's answer after the 429", resp, err)
				}
				wg.Wait()
				if n := primary.Count(); n != 2 {
					t.Errorf("primary calls = %d, want 2 (none within its Retry-After)", n)
				}
			})
		})
	}
}
