package spend

import (
	"cmp"
	"context"
	"time"

	"github.com/portico-llm/portico"
)

// Budgets is the spend-budget layer: [Budgets.Wrap] reserves a request's
// estimated cost in each of its key's budgets before calling the Model
// below, settles it with the answer's Response.Cost, refunds it for a
// call that sent nothing, and refuses a key whose budget is spent. Build
// it with [New]; it is safe for concurrent use.
type Budgets struct {
	cfg   Config
	key   func(*portico.Request) string
	est   portico.Estimator
	store Store
	local *Memory // this instance's share while the shared store fails
}

// New returns the Budgets cfg describes, or an error starting with
// "spend:" naming the field that can only be a mistake: no Routes, no
// Limits (nor Tiers), a Window that is not one or repeated, an Amount not
// finite and positive, Tier without Tiers
// (or the reverse), FailOpen without Instances (or the reverse), a
// route's invalid Capabilities.
func New(cfg Config) (*Budgets, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	b := &Budgets{cfg: cfg, key: cfg.Key, est: cmp.Or(cfg.Estimator, portico.DefaultEstimator), store: cfg.Shared.Store}
	if b.key == nil {
		b.key = ByClient
	}
	if b.store == nil {
		b.store = &Memory{}
	} else if cfg.Shared.FailOpen {
		b.local = &Memory{}
	}
	return b, nil
}

// Estimate returns the cost Wrap reserves for req, in the Routes' price
// unit: the most [portico.Capabilities.EstimateCost] among the Routes
// that fit req (all of them when none does), with the Estimator's input.
// It does not allocate.
func (b *Budgets) Estimate(req *portico.Request) float64 {
	in := b.est.EstimateInputTokens(req)
	return b.estimate(req, in, false)
}

// estimate is Estimate with the input estimate in; with fitOnly it
// returns -1 when no route fits.
func (b *Budgets) estimate(req *portico.Request, in int, fitOnly bool) float64 {
	best, all := -1.0, 0.0
	for i := range b.cfg.Routes {
		c := &b.cfg.Routes[i]
		e := c.EstimateCost(req, in)
		all = max(all, e)
		if e > best && c.Fits(req, in) == nil {
			best = e
		}
	}
	if best < 0 && !fitOnly {
		return all
	}
	return best
}

// limits returns req's limits and, when they are a tier's, the tier.
func (b *Budgets) limits(req *portico.Request) ([]Limit, string) {
	if b.cfg.Tier != nil {
		t := b.cfg.Tier(req)
		if ls, ok := b.cfg.Tiers[t]; ok {
			return ls, t
		}
	}
	return b.cfg.Limits, ""
}

// Balance is one budget of a key: its Limit, what the current window has
// spent (reservations of calls under way included) and when it renews.
type Balance struct {
	Limit  Limit
	Spent  float64
	Renews time.Time
}

// Balances returns the budgets of req's key (Config.Key, and its tier),
// in the order of its limits, for the windows now falls in. Its error is
// the store's.
func (b *Budgets) Balances(ctx context.Context, req *portico.Request) ([]Balance, error) {
	ls, _ := b.limits(req)
	a := &Account{Name: b.cfg.Shared.Name, Key: b.key(req), At: time.Now(), Limits: ls}
	spent, err := b.store.Spent(ctx, a)
	if err != nil {
		return nil, err
	}
	out := make([]Balance, len(ls))
	for i, l := range ls {
		_, end := l.Window.Of(a.At)
		out[i] = Balance{Limit: l, Spent: spent[i], Renews: end}
	}
	return out, nil
}

// Wrap is the Middleware: it admits a request while every budget of its
// key has spent less than its Amount, reserving [Budgets.Estimate] in
// each, then calls next (with a lower Contract.MaxCost when Steer says
// so) and settles: an answer is charged its Response.Cost (the
// reservation replaced by it), an error that sent nothing
// ([portico.NothingSent]) nothing, any other error the reservation (it
// may have been billed). A key without limits passes through. It refuses
// with a [portico.RateLimited] error, RefusedBy [portico.SpendBudget],
// NotSent, RetryAfter the time until the spent window renews, wrapping a
// [*SpentError] (and [ErrSpent]); a call whose context is done with
// [portico.Gone]'s error, and, when the shared store fails and FailOpen is
// off, with a [portico.Rejected] error wrapping the store's.
func (b *Budgets) Wrap(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if err := portico.Gone(ctx); err != nil {
			return nil, err
		}
		ls, tier := b.limits(req)
		if len(ls) == 0 {
			return next.Generate(ctx, req)
		}
		a := &Account{Name: b.cfg.Shared.Name, Key: b.key(req), At: time.Now(), Limits: ls}
		in := b.est.EstimateInputTokens(req)
		cost := b.estimate(req, in, false)
		store, g, err := b.reserve(ctx, req, a, cost)
		switch {
		case err != nil:
			return nil, err
		case !g.Admitted:
			return nil, b.refusal(ctx, req, a, g.Over, tier)
		}
		out := req
		if b.cfg.Steer && g.Remaining < cost {
			out = b.steer(req, g.Remaining)
		}
		delta := -cost // a panic: the reservation goes back, the panic on
		defer func() { settle(ctx, store, a, delta) }()
		resp, err := next.Generate(ctx, out)
		delta = charge(resp, err, cost) - cost
		return resp, err
	})
}

// settle adds delta to a's reservation in store, the call's cost less
// what it reserved. The store's failure leaves the reservation standing:
// a refund lost is budget unused, never overspent.
func settle(ctx context.Context, store Store, a *Account, delta float64) {
	if delta != 0 {
		_ = store.Settle(context.WithoutCancel(ctx), a, delta)
	}
}

// charge returns what a call's outcome costs, reserved having been
// reserved for it: an answer its Cost, an error that sent nothing
// nothing, any other error the reservation (it may have been billed).
func charge(resp *portico.Response, err error, reserved float64) float64 {
	switch {
	case err == nil && resp != nil:
		return resp.Cost
	case portico.NothingSent(err):
		return 0
	}
	return reserved
}

// reserve reserves cost on a in the store, or, while a shared store fails,
// as Config.Shared says: it returns the store that holds the reservation.
func (b *Budgets) reserve(ctx context.Context, req *portico.Request, a *Account, cost float64) (Store, Grant, error) {
	g, err := b.store.Reserve(ctx, a, cost)
	if err == nil {
		return b.store, g, nil
	}
	if gone := portico.Gone(ctx); gone != nil {
		return nil, g, gone
	}
	if b.local == nil {
		portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Route: req.Model, Class: portico.Transient, Reason: "spend:fail_closed"})
		return nil, g, &portico.Error{Class: portico.Rejected, RefusedBy: portico.SpendBudget, Reason: "spend store unavailable",
			NotSent: true, Err: err}
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Route: req.Model, Class: portico.Transient, Reason: "spend:fail_open"})
	share := make([]Limit, len(a.Limits))
	for i, l := range a.Limits {
		share[i] = Limit{Window: l.Window, Amount: l.Amount / float64(b.cfg.Shared.Instances)}
	}
	a.Limits = share
	g, _ = b.local.Reserve(ctx, a, cost)
	return b.local, g, nil
}

// refusal is the error of a call a's limit over refused.
func (b *Budgets) refusal(ctx context.Context, req *portico.Request, a *Account, over int, tier string) error {
	l := a.Limits[over]
	_, end := l.Window.Of(a.At)
	wait := max(time.Until(end), 0)
	portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitReject, Route: req.Model, Class: portico.RateLimited,
		Delay: wait, Reason: "spend:" + l.Window.String()})
	return &portico.Error{Class: portico.RateLimited, RefusedBy: portico.SpendBudget, RetryAfter: wait, NotSent: true,
		Err: &SpentError{Limit: l, Tier: tier, Renews: end}}
}

// steer returns req with Contract.MaxCost lowered to left when a route of
// Routes fits it so, else req.
func (b *Budgets) steer(req *portico.Request, left float64) *portico.Request {
	var k portico.Contract
	if req.Contract != nil {
		k = *req.Contract
	}
	if k.MaxCost > 0 && k.MaxCost <= left || !(left > 0) {
		return req
	}
	k.MaxCost = left
	r := req.Clone()
	r.Contract = &k
	if b.estimate(r, b.est.EstimateInputTokens(r), true) < 0 {
		return req
	}
	return r
}
