package stack

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/throttle"
	"github.com/portico-llm/portico/trace"
	"github.com/portico-llm/portico/validate"
)

// Route is one destination of a stack and the configuration of the layers
// around it, each its own package's Config. The zero value of every
// layer's Config means that layer's defaults; Skip leaves a layer out, and
// a nil pointer means no such layer.
type Route struct {
	// Route names the destination and gives its Model (usually a provider
	// adapter such as provider/openai's), Capabilities and ModelName. Its
	// Health is ignored: the stack sets it to the route's breaker.
	portico.Route
	// Limiter, when non-nil, configures the route's per-model limiter:
	// the provider account's limits (requests and tokens per period, an
	// in-flight cap, an adaptive one in Concurrency, a Queue before it),
	// which the provider's x-ratelimit-* headers tighten. Its zero fields
	// that place it are filled: Key means ratelimit.ByModel, RefusedBy
	// portico.RouteLimit, and with a Shared.Store an empty Shared.Name
	// means "route " + Name (each route's buckets its own). Nil means
	// none.
	Limiter *ratelimit.Config
	// Breaker configures the route's breaker; an empty Name means Route.Name.
	Breaker breaker.Config
	// Retry configures the route's retry layer; an empty Destination means
	// Route.Name, so retry budgets and retry events are per route: each
	// route's retries are bounded by its own budget, shared by every client,
	// as well as by each client's.
	Retry retry.Config
	// Validate configures the route's acceptance pipeline.
	Validate validate.Config
	// Skip is the set of layers the route leaves out (SkipBreaker,
	// SkipRetry, SkipValidate); zero keeps them all.
	Skip Skip
	// Hedge, when non-nil, hedges the route's calls to the route itself
	// (package hedge), outside its limiter and breaker so that each hedge
	// is admitted and counted like any call; an empty Destination means
	// Route.Name, a nil Budget the route's retry budget, and a nil Cost
	// the route's Capabilities.EstimateCost (with Fallback.Estimator). Nil
	// means no hedging to the route; see Config.Hedge for hedging to the
	// next route.
	Hedge *hedge.Config
	// Throttle, when non-nil, adds client-side adaptive throttling (package
	// throttle) around the route's Model, inside validate and retry, so that
	// every attempt is a request and an answer validate refuses is not the
	// destination's refusal; one Throttle per route. Nil means none.
	Throttle *throttle.Config
	// Trace is the route's own tracing (with Config.Tracer; see
	// [trace.Tracer.ForRoute]): its attempt spans, and the request span when
	// it answers, carry these names. Empty fields mean the route's own:
	// Name, Capabilities.Provider (set Trace.Provider when the conventions'
	// name differs, "azure.ai.openai" say), ModelName, and Capabilities as
	// Pricing; then Config.Tracer's.
	Trace trace.Route
	// Middleware wraps the route outermost, first outermost, outside its
	// per-model limiter and breaker: it sees each call the group places on
	// the route, once, before anything is spent on it (a per-route cache or
	// logger). Its errors follow the group's move-on rules but never count
	// against the breaker, which sees only what is inside it.
	Middleware []portico.Middleware
	// ModelMiddleware wraps Route.Model alone, first outermost, inside
	// validate: it sees every attempt's raw call and answer (a recorder, a
	// fault injector, a header-adding wrapper). What it returns is
	// validated, retried and counted by the breaker like the provider's own.
	ModelMiddleware []portico.Middleware
	// Order arranges the route's layers, outermost first, from what New
	// built, and is called once, by New; nil means [Recipe], the
	// documented order. Start from Recipe's result to move a layer; a nil
	// middleware is left out. New fails when the result leaves out or
	// repeats a non-nil layer of Layers.
	Order func(Layers) []portico.Middleware
}

// Skip is a set of the layers a route has unless it leaves them out
// (Route.Skip).
type Skip uint8

// The layers a route may leave out.
const (
	SkipBreaker  Skip = 1 << iota // no breaker: the route is always available to the group
	SkipRetry                     // no retry layer: one attempt per call, and no budget for hedges
	SkipValidate                  // no acceptance pipeline
)

// String names the layers in s, "breaker|retry" say, or "none".
func (s Skip) String() string {
	var names []string
	for i, n := range []string{"breaker", "retry", "validate"} {
		if s&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// built is what the stack built for one route; nil for a layer left out.
type built struct {
	limiter   *ratelimit.Limiter
	breaker   *breaker.Breaker
	retrier   *retry.Retrier
	hedger    *hedge.Hedger
	throttle  *throttle.Throttle
	retryDest string // the retrier's Destination, for its budget
	memo      *memo  // the layers kept from the configuration before (live.go)
	key       string // the prefix of the route's layers' keys in memo
}

// buildRoute builds rc's layers and returns the route as the stack's
// fallback group sees it, its Model wrapped in them as rc.Order (or
// Recipe) arranges them and its breaker as Health, and what it built; est
// is the group's Estimator.
func buildRoute(rc *Route, tr *trace.Tracer, est portico.Estimator, m *memo) (portico.Route, *built, error) {
	b := &built{memo: m, key: "route " + rc.Name + " "}
	l := Layers{Middleware: rc.Middleware, ModelMiddleware: rc.ModelMiddleware}
	if rc.ModelName == "" {
		ns := kept(m, b.key+"notServed", func() *notServed { return new(notServed) })
		l.Unserved, l.NotServed = ns.skip, ns.learn
	}
	if err := b.build(rc, est, &l); err != nil {
		return portico.Route{}, nil, err
	}
	if tr != nil {
		l.Attempt = tr.ForRoute(routeTrace(rc)).WrapAttempt
	}
	r := rc.Route
	if rc.Order == nil {
		r.Model = portico.Chain(rc.Model, Recipe(l)...)
	} else {
		l, check := tally(l)
		r.Model = portico.Chain(rc.Model, rc.Order(l)...)
		if err := check(); err != nil {
			return portico.Route{}, nil, err
		}
	}
	r.Health = nil
	if b.breaker != nil {
		r.Health = b.breaker
	}
	return r, b, nil
}

// build builds rc's policy layers into b and l, each from its Config with
// the fields that place it filled when zero; the retrier before the
// Hedger, which charges its budget. The first error is New's.
func (b *built) build(rc *Route, est portico.Estimator, l *Layers) error {
	lc := placeLimiter(deref(rc.Limiter), ratelimit.ByModel, portico.RouteLimit, "route "+rc.Name, est)
	bc, tc := rc.Breaker, rc.Retry
	bc.Name = cmp.Or(bc.Name, rc.Name)
	tc.Destination = cmp.Or(tc.Destination, rc.Name) // budgets and retry events per route, not per model name
	b.retryDest = tc.Destination
	var v *validate.Validator
	var errs [6]error
	l.Limiter, errs[0] = layer(b, rc.Limiter == nil, lc, ratelimit.New, &b.limiter)
	l.Breaker, errs[1] = layer(b, rc.Skip&SkipBreaker != 0, bc, breaker.New, &b.breaker)
	l.Retry, errs[2] = layer(b, rc.Skip&SkipRetry != 0, tc, retry.New, &b.retrier)
	l.Hedge, errs[3] = b.hedge(rc, est)
	l.Validate, errs[4] = layer(b, rc.Skip&SkipValidate != 0, rc.Validate, validate.New, &v)
	l.Throttle, errs[5] = layer(b, rc.Throttle == nil, deref(rc.Throttle), throttle.New, &b.throttle)
	return cmp.Or(errs[:]...)
}

// layer builds a layer from c with newLayer into *kept (or keeps the one
// the configuration before built from the same c, see [Stack.Update]) and
// returns its Wrap, or nil when skip.
func layer[C any, L interface {
	Wrap(portico.Model) portico.Model
}](b *built, skip bool, c C, newLayer func(C) (L, error), kept *L) (portico.Middleware, error) {
	if skip {
		return nil, nil
	}
	var err error
	if *kept, err = remember(b.memo, b.key+fmt.Sprintf("%T", c), c, newLayer); err != nil {
		return nil, err
	}
	return (*kept).Wrap, nil
}

// hedge builds rc's same-route Hedger (none without rc.Hedge) into b and
// returns its Wrap: to the route, charged to its retry budget, at its
// cost. It is built afresh: its Cost closure prices with rc.Capabilities,
// which remember cannot see.
func (b *built) hedge(rc *Route, est portico.Estimator) (portico.Middleware, error) {
	if rc.Hedge == nil {
		return nil, nil
	}
	c := *rc.Hedge
	c.Destination = cmp.Or(c.Destination, rc.Name)
	if c.Budget == nil && b.retrier != nil {
		c.Budget = budgets{c.Destination: b}
	}
	if c.Cost == nil {
		c.Cost = costOf(rc.Capabilities, est)
	}
	var err error
	if b.hedger, err = hedge.New(c); err != nil {
		return nil, err
	}
	return b.hedger.Wrap, nil
}

// deref is *p, or the zero T when p is nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// routeTrace is rc.Trace with its empty fields set from the route.
func routeTrace(rc *Route) trace.Route {
	t := rc.Trace
	t.Name = cmp.Or(t.Name, rc.Name)
	t.Provider = cmp.Or(t.Provider, rc.Capabilities.Provider)
	t.Model = cmp.Or(t.Model, rc.ModelName)
	if t.Pricing == nil {
		caps := rc.Capabilities
		t.Pricing = &caps
	}
	return t
}
