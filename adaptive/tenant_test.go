package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
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
				if got := lim.Limit(); got != adaptive.DefaultInitial {
					t.Errorf("Limit() after 100 calls with a 100 ms deadline to a 400 ms route = %d, want %d (no sample)", got, adaptive.DefaultInitial)
				}
				lim = adaptive.MustNew(adaptive.Config{Algorithm: alg})
				shortShare := limiter(t, ratelimit.Config{Concurrency: lim}).Wrap(modeltest.NewFake(modeltest.Outcome{Err: cut, Latency: 100 * time.Millisecond}))
				for range 100 {
					shortShare.Generate(context.Background(), req)
				}
				if got := lim.Limit(); got != adaptive.DefaultInitial {
					t.Errorf("Limit() after 100 cuts of a short share = %d, want %d (no sample)", got, adaptive.DefaultInitial)
				}
			})
		})
	}
}

// A hung destination still lowers the limit: it answers nothing, and a
// layer's own timeout that is the route's fault ends each call (retry's
// Timeouts.Attempt here; a fallback group's share past its FaultAfter is
// the same Ambiguous layer timeout, without ErrDeadlineCut). Those are
// drops: 100 calls that each hang for the 1 s attempt timeout bring AIMD
// from 20 to 5 and Vegas to 10, ten windows of drops.
func TestHungDestinationLowersTheLimit(t *testing.T) {
	for _, c := range []struct {
		alg  adaptive.Algorithm
		want int
	}{{adaptive.AIMD{}, 5}, {adaptive.Vegas{}, 10}} {
		alg, want := c.alg, c.want
		t.Run(fmt.Sprintf("%T", alg), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim := adaptive.MustNew(adaptive.Config{Algorithm: alg})
				hung := modeltest.NewFake(modeltest.Outcome{Stall: true})
				r := retry.MustNew(retry.Config{MaxAttempts: 1, Timeouts: retry.Timeouts{Attempt: time.Second}})
				m := limiter(t, ratelimit.Config{Concurrency: lim}).Wrap(r.Wrap(hung))
				for range 100 {
					if _, err := m.Generate(context.Background(), req); !errors.Is(err, retry.ErrAttemptTimeout) {
						t.Fatalf("Generate = %v, want the attempt timeout", err)
					}
				}
				if got := lim.Limit(); got != want {
					t.Errorf("Limit() after 100 calls to a hung destination = %d, want %d", got, want)
				}
			})
		})
	}
}
