package retry

import (
	"context"
	"errors"
	"log/slog"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/admit"
	"github.com/portico-llm/portico/internal/failopen"
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

// Shared is the [portico.Shared] a [Retrier] takes (Budget.Shared): both
// of its budgets in a [BudgetStore], under Name (the store sees each
// destination after Name, so two Retriers share budgets only when their
// Names agree).
//
// When the store fails, with FailOpen the retry is decided on this
// instance's local share of the budgets, whose bursts are 1/Instances of
// the configured ones (rounded down, at least 1) and whose ratios are
// unchanged, kept while the store answers too (credited with this
// instance's deposits, charged for the tokens the store gives it, emptied
// when it refuses one; see the package documentation); otherwise (fail
// closed) the retry is not made ([ErrBudgetExhausted], Reason "shared"),
// and a failed deposit is lost, which only makes the budget stricter.
type Shared = portico.Shared[BudgetStore]

func checkShared(s *Shared) error {
	if err := failopen.Check("Config.Budget.Shared", s.Store != nil, s.FailOpen, s.Instances); err != nil {
		return errors.New("retry: " + err.Error())
	}
	return nil
}

// sharedBudgets is a Retrier's shared state: the store and the limits it
// applies. The Retrier's own budgets hold the local share, which, failing
// open, follows the store's decisions by internal/failopen's rule.
type sharedBudgets struct {
	store     BudgetStore
	prefix    string // of every destination in the store: Shared.Name, length-prefixed, even empty
	lim       BudgetLimits
	failOpen  bool
	instances int
	need      int64 // what a share needs to give a token: 1/instances of one (failopen.Lead)
}

// newSharedBudgets returns the shared state of a Retrier whose budgets are
// in sh.Store, with the ratios and bursts of its Budget.
func newSharedBudgets(sh Shared, ratio, destRatio float64, burst, destBurst int, clientOnly bool) *sharedBudgets {
	s := &sharedBudgets{store: sh.Store, prefix: failopen.Prefix(sh.Name), failOpen: sh.FailOpen, instances: sh.Instances,
		lim: BudgetLimits{Deposit: depositOf(ratio, int64(burst)*unit), Capacity: int64(burst) * unit}}
	if !clientOnly {
		s.lim.DestinationDeposit, s.lim.DestinationCapacity = depositOf(destRatio, int64(destBurst)*unit), int64(destBurst)*unit
	}
	if n := sh.Instances; n > 0 {
		s.need = unit - int64(failopen.Lead(n)*unit)
	}
	return s
}

// refills reports whether a new request deposits anything: false with
// Budget.NoRefill.
func (s *sharedBudgets) refills() bool { return s.lim.Deposit != 0 || s.lim.DestinationDeposit != 0 }

// sharedDeposit credits a new request to the store, and, failing open, to
// the local share whether the store answered or not (fail closed: a
// deposit the store missed is lost).
func (r *Retrier) sharedDeposit(ctx context.Context, dest, client string) {
	s := r.shared
	if !s.refills() {
		return // Budget.NoRefill: nothing to credit
	}
	err := s.deposit(ctx, dest, client)
	if s.failOpen {
		r.deposit(dest, client)
	}
	if err == nil || ctx.Err() != nil {
		return
	}
	r.degraded(ctx, dest, "deposit", err)
}

// deposit credits a new request of (dest, client) to the store, unless
// the request's admission plan made the deposit already.
func (s *sharedBudgets) deposit(ctx context.Context, dest, client string) error {
	if admit.From(ctx).Deposited(s, s.prefix+dest, client) {
		return nil
	}
	return s.store.Deposit(ctx, s.prefix+dest, client, &s.lim)
}

// PlanAdmission adds req's deposit in r's shared budgets to p, the
// request's admission asked ahead in one call to the store (package stack
// builds p; its type is internal). It reports false, adding nothing,
// when r has no shared budgets or nothing to deposit, p has a deposit,
// or req is a hedge.
func (r *Retrier) PlanAdmission(req *portico.Request, p *admit.Plan) bool {
	s := r.shared
	if s == nil || p.HasDeposit || req.Hedge || !s.refills() { // shared budgets are on budgets
		return false
	}
	p.Deposit = admit.Deposit{Owner: s, Dest: s.prefix + r.destOf(req), Client: req.Identity.ClientKey,
		Deposit: s.lim.Deposit, Capacity: s.lim.Capacity,
		DestinationDeposit: s.lim.DestinationDeposit, DestinationCapacity: s.lim.DestinationCapacity}
	p.HasDeposit = true
	return true
}

// Admission returns the store that runs PlanAdmission's plans for r, nil
// without shared budgets in a store that joins one (see redisstore).
func (r *Retrier) Admission() admit.Store {
	if r.shared == nil {
		return nil
	}
	return admit.AdmissionOf(r.shared.store)
}

// Unclaimed is never called for a deposit (admit.Owner).
func (s *sharedBudgets) Unclaimed(context.Context, *admit.Bucket) {}

// sharedSpend takes a retry's tokens from the store, or, when it fails,
// from the local share (fail open) or refuses with "shared" (fail closed).
// Failing open, the share follows the store's answer: the tokens it gave
// are taken from the share too, never below zero, and a bucket it found
// empty empties the share's. It returns the budget that refused, or "".
func (r *Retrier) sharedSpend(ctx context.Context, dest, client string) string {
	s := r.shared
	which, err := s.store.Spend(ctx, s.prefix+dest, client, &s.lim)
	if err == nil {
		if s.failOpen {
			r.mirror(dest, client, which)
		}
		return which
	}
	r.degraded(ctx, dest, "spend", err)
	if !s.failOpen {
		return "shared"
	}
	p := r.pairOf(dest, client)
	return spendAt(r.dests, p.client, p.dest, s.need)
}

// mirror makes the local share of (dest, client) follow the store's
// answer to a spend, refused by which ("" when it gave the tokens).
func (r *Retrier) mirror(dest, client, which string) {
	p := r.pairOf(dest, client)
	switch which {
	case "":
		p.client.mirrorSpend()
		p.dest.mirrorSpend()
	case "client":
		p.client.mirrorRefused(r.shared.instances)
	case "destination":
		p.dest.mirrorRefused(r.shared.instances)
	}
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

// mirrorSpend takes from a local share the token the store gave: one, but
// not below zero (see internal/failopen).
func (b *bucket) mirrorSpend() { b.update(func(v int64) int64 { return failopen.Charge(v, unit) }) }

// mirrorRefused lowers a local share whose bucket in the store had less
// than one token (how much less is not known: 0) to 1/n of it.
func (b *bucket) mirrorRefused(n int) {
	b.update(func(v int64) int64 { return failopen.Refused(v, 0, n) })
}

// update sets the level to f of it, atomically; on a nil bucket (no
// destination budget) it does nothing.
func (b *bucket) update(f func(int64) int64) {
	for b != nil {
		v := b.level.Load()
		if b.level.CompareAndSwap(v, f(v)) {
			return
		}
	}
}
