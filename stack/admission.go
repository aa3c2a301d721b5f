package stack

import (
	"context"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/admit"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
)

// admission asks ahead, in one call to the shared store, what a request
// would ask it layer by layer before it is sent: the client limiter's
// take, the first route's limiter's take and the first route's retry
// deposit (internal/admit). It sits inside the deadline, outside the
// client limiter; each layer then finds its step done in the context and
// skips its own round trip. A later route of a fallback group, a hedge,
// a wait for admission ask the store themselves; a take the plan charged
// whose route the request never reached is given back after the call.
type admission struct {
	store  admit.Store
	client *ratelimit.Limiter // nil: not in the plan
	route  *ratelimit.Limiter
	retry  *retry.Retrier
	first  portico.Route // the route whose layers are planned
	next   portico.Model
}

// newAdmission returns the admission of a stack whose client limiter is
// client (nil: none) and whose first route is first, built as b, or nil
// when fewer than two of those steps join one store: one step alone costs
// its layer one round trip either way.
func newAdmission(client *ratelimit.Limiter, first portico.Route, b *built, plain bool) func(portico.Model) portico.Model {
	if !plain {
		return nil // each layer asks its own: a plan would charge the first route for traffic sent elsewhere
	}
	a := admission{first: first}
	joined := 0
	join := func(s admit.Store) bool {
		switch {
		case s == nil:
			return false
		case a.store == nil:
			a.store = s
		case a.store != s:
			return false
		}
		joined++
		return true
	}
	if client != nil && join(client.Admission()) {
		a.client = client
	}
	if b.limiter != nil && join(b.limiter.Admission()) {
		a.route = b.limiter
	}
	if b.retrier != nil && join(b.retrier.Admission()) {
		a.retry = b.retrier
	}
	if joined < 2 {
		return nil
	}
	return func(next portico.Model) portico.Model {
		m := a
		m.next = next
		return &m
	}
}

// Generate plans req's admission, has the store run it in one call, and
// sends req on with the plan in its context.
func (a *admission) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if req == nil || ctx.Err() != nil {
		return a.next.Generate(ctx, req) // the layers below decide, as without a plan
	}
	p := new(admit.Plan)
	n := a.plan(req, p)
	if n < 2 || a.store.Admit(ctx, p) != nil {
		// One step, or the store could not decide: each layer asks its
		// own (during an outage, failing at once as this did).
		return a.next.Generate(ctx, req)
	}
	defer p.Unclaimed(ctx) // even through a panic below
	return a.next.Generate(admit.With(ctx, p), req)
}

// firstIsNext reports whether, under cfg, a request admitted by the client
// limiter goes next to the first route whenever it can: no kind, group,
// alias, policy or weights sends it elsewhere, and no layer between the
// client limiter and the routes (an in-flight cap, a spend budget) refuses
// it. Only then does the admission plan the first route's steps: a planned
// take the request never uses is given back after the call (its tokens,
// and its request where the store can: ratelimit.Returner), but a take
// that other traffic would have needed meanwhile was held for the call.
func firstIsNext(cfg Config) bool {
	return cfg.Kind == nil && len(cfg.Groups) == 0 && len(cfg.Aliases) == 0 &&
		cfg.Fallback.Policy == nil && len(cfg.Fallback.Weights) == 0 && cfg.InFlight == nil && cfg.Spend == nil
}

// plan adds to p the steps of req's admission the client's limiter, the
// route's and the retry budget plan, and returns how many planned one.
func (a *admission) plan(req *portico.Request, p *admit.Plan) int {
	n := 0
	if a.client != nil && a.client.PlanAdmission(req, p) {
		n++
	}
	if a.route == nil && a.retry == nil {
		return n
	}
	rreq := req
	if a.first.ModelName != "" && a.first.ModelName != req.Model || req.Prefix != "" {
		rreq = a.first.RequestFor(req) // as the route's layers will see it
	}
	if a.route != nil && a.route.PlanAdmission(rreq, p) {
		n++
	}
	if a.retry != nil && a.retry.PlanAdmission(rreq, p) {
		n++
	}
	return n
}
