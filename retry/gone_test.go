package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// TestGone: a call whose caller has gone is refused with the context's
// error, NotSent, and the wrapped Model is never called, with the defaults
// and with every timeout set (before, the first attempt was made with it).
func TestGone(t *testing.T) {
	for name, cfg := range map[string]Config{
		"defaults": {},
		"timeouts": {MinAttemptTime: time.Millisecond, Timeouts: Timeouts{Attempt: time.Minute, FirstChunk: time.Minute}},
	} {
		t.Run(name, func(t *testing.T) {
			modeltest.RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
				return mustNew(t, cfg).Wrap(base)
			})
		})
	}
}

// TestGoneDepositsNothing: a call whose caller has gone makes no attempt,
// so it adds nothing to the retry budgets that each new request feeds.
func TestGoneDepositsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew(t, Config{MaxAttempts: 2, Budget: Budget{Ratio: 0.5, Burst: 2}, Backoff: Backoff{Schedule: Immediate}})
		m := r.Wrap(failing(transient()))
		// One failed call and its retry: 2 + 0.5 (capped at 2) - 1 = 1.
		m.Generate(t.Context(), userReq)
		if got := r.BudgetLevel("m", ""); got != 1 {
			t.Fatalf("BudgetLevel after a retried call = %v, want 1", got)
		}
		dead, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := m.Generate(dead, userReq); !errors.Is(err, context.Canceled) {
			t.Fatalf("Generate(canceled) = %v, want context.Canceled", err)
		}
		if got := r.BudgetLevel("m", ""); got != 1 {
			t.Errorf("BudgetLevel after a canceled call = %v, want 1: nothing deposited", got)
		}
	})
}
