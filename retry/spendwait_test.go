package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestRetryNotMadeTakesNoToken: a retry that its wait ends (the route's
// cooldown starts during the backoff, past the outer layer's cap on a
// wait in place; or the caller goes) takes no budget token. With a
// BudgetStore, which has no refund, the token is taken once the wait is
// over, so the store sees no Spend; in the process it is taken before the
// wait, so that a spent budget refuses at once, and given back. Before, a
// store's token was taken before the wait and lost, and the process's was
// lost when the caller went during the wait.
func TestRetryNotMadeTakesNoToken(t *testing.T) {
	for _, c := range []struct {
		name   string
		shared bool
		cancel bool // the caller goes during the wait; else the route cools down
	}{
		{"store, cooldown", true, false},
		{"store, caller gone", true, true},
		{"process, cooldown", false, false},
		{"process, caller gone", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &fakeBudgets{}
				cfg := Config{Destination: "a", Backoff: Backoff{Schedule: Exponential, BaseDelay: 200 * time.Millisecond}}
				if c.shared {
					cfg.Budget.Shared = Shared{Store: store}
				}
				r := mustNew(t, cfg)
				base := failing(transient())
				start := time.Now()
				ctx := portico.ContextWithMaxWait(context.Background(), 500*time.Millisecond)
				ctx = portico.ContextWithCooldown(ctx, func() time.Time {
					if !c.cancel && time.Since(start) >= 100*time.Millisecond {
						return start.Add(time.Second)
					}
					return time.Time{}
				})
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if c.cancel {
					time.AfterFunc(100*time.Millisecond, cancel)
				}
				req := userReq.Clone()
				req.Identity.ClientKey = "c"
				level := r.BudgetLevel("a", "c")
				_, err := r.Wrap(base).Generate(ctx, req)
				want := ErrRetryAfterTooLong
				if c.cancel {
					want = context.Canceled
				}
				if base.calls() != 1 || !errors.Is(err, want) {
					t.Fatalf("Generate: %d calls, err %v; want 1 call and %v", base.calls(), err, want)
				}
				if c.shared {
					if store.spends != 0 {
						t.Errorf("store spends = %d, want 0: the retry was not made", store.spends)
					}
				} else if got := r.BudgetLevel("a", "c"); got < level {
					t.Errorf("budget level %v after the call, %v before; want no token taken", got, level)
				}
			})
		})
	}
}
