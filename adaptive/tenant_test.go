package adaptive_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// One tenant's short deadlines must not lower the route's limit for every
// tenant. A healthy route answers in 400 ms; one tenant calls it with 100 ms
// deadlines (its own context's, or a fallback group's cut of its share,
// portico.ErrDeadlineCut, which breakers and the throttle ignore). Each such
// call ends as a drop, and AIMD and Vegas bring the shared limit down to
// their minimum (1 and 2 in the preset after 300 such calls), so every other
// tenant's calls beyond it are shed with ErrOverloaded although the route
// never refused or slowed down. A deadline the caller chose, ended before
// the route's usual latency, says nothing of the route's capacity.
func TestShortDeadlinesDoNotLowerTheLimit(t *testing.T) {
	t.Skip("bug: one tenant's short deadlines (caller's Deadline, or a group's ErrDeadlineCut) are drops that lower the shared adaptive limit to its minimum")
	cut := &portico.Error{Class: portico.Ambiguous, Err: portico.Join(portico.ErrLayerTimeout, portico.ErrDeadlineCut)}
	for name, alg := range map[string]adaptive.Algorithm{"AIMD": adaptive.AIMD{}, "Vegas": adaptive.Vegas{}} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim := adaptive.MustNew(adaptive.Config{Algorithm: alg})
				healthy := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("ok").Response, Latency: 400 * time.Millisecond})
				m := limiter(t, ratelimit.Config{Concurrency: lim}).Wrap(healthy)
				for range 100 {
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					m.Generate(ctx, req)
					cancel()
				}
				if got := lim.Limit(); got < adaptive.DefaultInitial {
					t.Errorf("Limit() after 100 calls with a 100 ms deadline to a 400 ms route = %d, want at least %d", got, adaptive.DefaultInitial)
				}
				lim = adaptive.MustNew(adaptive.Config{Algorithm: alg})
				shortShare := limiter(t, ratelimit.Config{Concurrency: lim}).Wrap(modeltest.NewFake(modeltest.Outcome{Err: cut, Latency: 100 * time.Millisecond}))
				for range 100 {
					shortShare.Generate(context.Background(), req)
				}
				if got := lim.Limit(); got < adaptive.DefaultInitial {
					t.Errorf("Limit() after 100 cuts of a short share = %d, want at least %d", got, adaptive.DefaultInitial)
				}
			})
		})
	}
}
