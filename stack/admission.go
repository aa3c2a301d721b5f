package stack

import (
	"cmp"
	"context"
	"reflect"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/admit"
	"github.com/portico-llm/portico/ratelimit"
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
	client planner       // nil: not in the plan
	route  []planner     // the first route's limiter and retry layer in the plan
	first  portico.Route // the route whose layers are planned
	next   portico.Model
}

// planner is a layer whose store steps an admission plans: a limiter, a
// retry layer.
type planner interface {
	Admission() admit.Store
	PlanAdmission(*portico.Request, *admit.Plan) bool
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
	if a.join(client) {
		a.client = client
	}
	for _, p := range []planner{b.limiter, b.retrier} {
		if a.join(p) {
			a.route = append(a.route, p)
		}
	}
	if len(a.route) == 0 || a.client == nil && len(a.route) == 1 {
		return nil
	}
	return func(next portico.Model) portico.Model {
		m := a
		m.next = next
		return &m
	}
}

// join reports whether p, a layer's pointer (nil: no layer), joins a's
// plan: it has a store, the first one or the plan's.
func (a *admission) join(p planner) bool {
	if reflect.ValueOf(p).IsNil() {
		return false
	}
	s := p.Admission()
	a.store = cmp.Or(a.store, s)
	return s != nil && s == a.store
}

// Generate plans req's admission, has the store run it in one call, and
// sends req on with the plan in its context.
func (a *admission) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if ctx.Err() != nil {
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
	return cfg.Kind == nil && cfg.Fallback.Policy == nil && cfg.InFlight == nil && cfg.Spend == nil &&
		len(cfg.Groups)+len(cfg.Aliases)+len(cfg.Fallback.Weights) == 0
}

// plan adds to p the steps of req's admission the client's limiter, the
// route's and the retry budget plan, and returns how many planned one.
func (a *admission) plan(req *portico.Request, p *admit.Plan) int {
	n := 0
	if a.client != nil && a.client.PlanAdmission(req, p) {
		n++
	}
	rreq := a.first.RequestFor(req) // as the route's layers will see it
	for _, s := range a.route {
		if s.PlanAdmission(rreq, p) {
			n++
		}
	}
	return n
}
