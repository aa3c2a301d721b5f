package adaptive_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// TestGone: a Limiter driven by a Limit refuses a call whose caller has
// gone with the context's error, NotSent, next not called.
func TestGone(t *testing.T) {
	modeltest.RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
		return limiter(t, ratelimit.Config{Concurrency: adaptive.MustNew(adaptive.Config{Max: 1000, Initial: 1000})}).Wrap(base)
	})
}

// TestGoneTakesNoSlot: with the limit's one slot taken, a call whose
// caller has gone is neither shed nor counted: it fails with the context's
// error (before, it was shed as overloaded, or with a free slot sent on),
// and the limit learns nothing from it.
func TestGoneTakesNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := adaptive.MustNew(adaptive.Config{Algorithm: adaptive.AIMD{Backoff: 0.5}, Initial: 1, Window: 1})
		base := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("ok").Response, Latency: time.Second})
		m := limiter(t, ratelimit.Config{Concurrency: lim}).Wrap(base)
		go m.Generate(t.Context(), req)
		synctest.Wait() // the live call holds the slot
		dead, cancel := context.WithCancel(t.Context())
		cancel()
		for range 10 {
			if _, err := m.Generate(dead, req); !errors.Is(err, context.Canceled) || errors.Is(err, ratelimit.ErrOverloaded) {
				t.Fatalf("Generate(canceled) = %v, want context.Canceled", err)
			}
		}
		synctest.Wait()
		if got := lim.Limit(); got != 1 || base.Count() != 1 {
			t.Errorf("after 10 canceled calls: Limit() = %d, %d calls; want 1 and the live call's 1", got, base.Count())
		}
	})
}
