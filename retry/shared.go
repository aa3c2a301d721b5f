package retry

import (
	"context"
	"errors"
	"log/slog"

	"github.com/portico-llm/portico"
)

// BudgetStore keeps the retry budgets of a [Retrier] outside the process,
// in a store that several processes share (package redisstore implements
// it over Redis), so that a budget of 20 retries is 20 across every
// instance of a service, not 20 per instance. Both buckets of a retry, its
// (destination, client key)'s and its destination's, live in the store, and
// each method must be atomic over both. Implementations must be safe for
// concurrent use. An absent bucket is a full one. An error says the store
// could not decide; the Retrier then applies [Shared.FailOpen].
type BudgetStore interface {
	// Deposit credits one new request to (dest, client)'s bucket and to
	// dest's, each by its deposit and never beyond its capacity (see
	// [BudgetLimits]).
	Deposit(ctx context.Context, dest, client string, lim *BudgetLimits) error
	// Spend takes one retry token from (dest, client)'s bucket and one from
	// dest's, or takes none and names the bucket that had less than one:
	// "client" or "destination" (the destination's first). refused is ""
	// when the tokens were taken.
	Spend(ctx context.Context, dest, client string, lim *BudgetLimits) (refused string, err error)
}

// BudgetLimits are a [Retrier]'s budgets as a [BudgetStore] applies them,
// in units of 10^-9 retries (a decimal ratio is exact), from [Budget]: a
// new request deposits Deposit into its client's bucket of capacity
// Capacity, and DestinationDeposit into its destination's of capacity
// DestinationCapacity. DestinationCapacity 0 means no destination budget
// (Budget.ClientOnly).
type BudgetLimits struct {
	Deposit, Capacity                       int64
	DestinationDeposit, DestinationCapacity int64
}

// Shared puts a [Retrier]'s budgets in a [BudgetStore] shared by several
// processes. The zero value keeps them in the process.
//
// When the store fails (an error, or no answer within its own timeout) a
// [portico.EventSharedStore] event says how the retry was decided: with
// FailOpen, on local budgets whose bursts are 1/Instances of the
// configured ones (rounded down, at least 1) and whose ratios are
// unchanged, so that N instances together stay within the shared burst;
// otherwise (fail closed) the retry is not made ([ErrBudgetExhausted],
// Reason "shared"), and a failed deposit is lost, which only makes the
// budget stricter.
type Shared struct {
	// Store keeps the budgets; nil keeps them in the process (the default).
	Store BudgetStore
	// FailOpen decides on local budgets while the store fails, instead of
	// refusing every retry. It needs Instances.
	FailOpen bool
	// Instances is N, the number of processes sharing the store; with
	// FailOpen each gets 1/N of the bursts while the store fails. It must
	// be positive with FailOpen, and 0 without.
	Instances int
}

func (s *Shared) check() error {
	switch {
	case s.Instances < 0:
		return errors.New("retry: negative Config.Budget.Shared.Instances")
	case s.Store == nil && (s.FailOpen || s.Instances != 0):
		return errors.New("retry: Config.Budget.Shared.FailOpen or Instances without a Store")
	case s.FailOpen != (s.Instances > 0):
		return errors.New("retry: Config.Budget.Shared.FailOpen needs Instances, and Instances needs FailOpen")
	}
	return nil
}

// sharedBudgets is a Retrier's shared state: the store and the limits it
// applies. The Retrier's own budgets hold the local share.
type sharedBudgets struct {
	store    BudgetStore
	lim      BudgetLimits
	failOpen bool
}

// sharedDeposit credits a new request to the store, or, when it fails, to
// the local share (fail open) or nowhere (fail closed).
func (r *Retrier) sharedDeposit(ctx context.Context, dest, client string) {
	s := r.shared
	if s.lim.Deposit == 0 && s.lim.DestinationDeposit == 0 {
		return // Budget.NoRefill: nothing to credit
	}
	err := s.store.Deposit(ctx, dest, client, &s.lim)
	if err == nil || ctx.Err() != nil {
		return
	}
	r.degraded(ctx, dest, "deposit", err)
	if s.failOpen {
		c := r.budget.get(dest, client)
		c.deposit(r.budget.depositAmt, r.budget.capacity)
		if r.dests != nil {
			r.budget.aggregate(r.dests, c, dest).deposit(r.dests.depositAmt, r.dests.capacity)
		}
	}
}

// sharedSpend takes a retry's tokens from the store, or, when it fails,
// from the local share (fail open) or refuses with "shared" (fail closed).
// It returns the budget that refused, or "".
func (r *Retrier) sharedSpend(ctx context.Context, dest, client string) string {
	s := r.shared
	which, err := s.store.Spend(ctx, dest, client, &s.lim)
	if err == nil {
		return which
	}
	r.degraded(ctx, dest, "spend", err)
	if !s.failOpen {
		return "shared"
	}
	p := r.pairOf(dest, client)
	return spend(r.dests, p.client, p.dest)
}

// degraded reports a budget operation decided without the store.
func (r *Retrier) degraded(ctx context.Context, dest, op string, err error) {
	reason := "retry:fail_closed"
	if r.shared.failOpen {
		reason = "retry:fail_open"
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Route: dest, Class: portico.Transient, Reason: reason})
	r.log.LogAttrs(ctx, slog.LevelDebug, "retry: shared budget unavailable", slog.String("destination", dest),
		slog.String("op", op), slog.String("err", err.Error()))
}
