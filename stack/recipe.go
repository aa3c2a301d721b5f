package stack

import (
	"fmt"
	"slices"

	"github.com/portico-llm/portico"
)

// Layers are the middlewares New built for one route, for its Order to
// arrange: each is nil when the route leaves its layer out.
type Layers struct {
	// Middleware and ModelMiddleware are the route's own (Route.Middleware,
	// Route.ModelMiddleware).
	Middleware, ModelMiddleware []portico.Middleware
	// Unserved refuses, without a call, a model the route answered 404 for
	// (NotServed remembers it); NotServed makes that 404 Incompatible, the
	// request's fault, for every layer outside it. Both are set on a route
	// without a ModelName only.
	Unserved, NotServed portico.Middleware
	// Hedge hedges to the route itself (Route.Hedge).
	Hedge portico.Middleware
	// Limiter is the per-model limiter (Route.Limiter).
	Limiter portico.Middleware
	// Breaker, Retry and Validate are the route's layers of those names
	// (Route.Breaker, Route.Retry, Route.Validate).
	Breaker, Retry, Validate portico.Middleware
	// Attempt is Config.Tracer's attempt span for the route
	// ([trace.Tracer.ForRoute]).
	Attempt portico.Middleware
	// Throttle is the client-side throttle (Route.Throttle).
	Throttle portico.Middleware
}

// Outside the routes, New chains the stack's own layers in this order,
// outermost first: Config.Tracer's Wrap, Config.Guard (a refused request
// spends nothing, nor is answered from the cache), Config.Cache (so a hit
// spends nothing), Config.Middleware, the deadline, the admission (the
// shared stores' steps in one script, admission.go), Config.Client,
// Config.InFlight and Config.Spend (after the client limit, before any
// route), then the group over the routes, each in Recipe's order.

// Recipe returns l in the documented order of a route's layers, outermost
// first (see the package documentation for why): the order of a route
// whose Order is nil. A route that needs another order returns its own
// list from Route.Order instead.
func Recipe(l Layers) []portico.Middleware {
	mws := append([]portico.Middleware(nil), l.Middleware...)
	mws = append(mws,
		l.Unserved, // before anything is spent on the call
		l.Hedge,    // above everything that spends capacity
		l.Limiter,
		l.Breaker, // one outcome per call
		l.Retry,
		l.Attempt,
		l.Validate, // an invalid answer is one failed attempt
		l.Throttle, // every attempt a request, a refused schema not a refusal
		l.NotServed,
	)
	return append(mws, l.ModelMiddleware...)
}

// tally returns l with each non-nil layer wrapped to count how often
// Chain applies it (the Model it returns is the layer's own, so a call
// costs nothing more), and the check that a Route.Order's result was
// chained with each exactly once: an error naming the first layer left
// out or repeated.
func tally(l Layers) (Layers, func() error) {
	type count struct {
		name string
		n    int
	}
	var counts []*count
	wrap := func(name string, mw *portico.Middleware) {
		if *mw == nil {
			return
		}
		c, inner := &count{name: name}, *mw
		counts = append(counts, c)
		*mw = func(m portico.Model) portico.Model { c.n++; return inner(m) }
	}
	l.Middleware, l.ModelMiddleware = slices.Clone(l.Middleware), slices.Clone(l.ModelMiddleware)
	for i := range l.Middleware {
		wrap(fmt.Sprintf("Middleware[%d]", i), &l.Middleware[i])
	}
	for _, f := range []struct {
		name string
		mw   *portico.Middleware
	}{{"Unserved", &l.Unserved}, {"Hedge", &l.Hedge}, {"Limiter", &l.Limiter}, {"Breaker", &l.Breaker},
		{"Retry", &l.Retry}, {"Attempt", &l.Attempt}, {"Validate", &l.Validate}, {"Throttle", &l.Throttle},
		{"NotServed", &l.NotServed}} {
		wrap(f.name, f.mw)
	}
	for i := range l.ModelMiddleware {
		wrap(fmt.Sprintf("ModelMiddleware[%d]", i), &l.ModelMiddleware[i])
	}
	return l, func() error {
		for _, c := range counts {
			switch {
			case c.n == 0:
				return fmt.Errorf("layer %s left out by Order", c.name)
			case c.n > 1:
				return fmt.Errorf("layer %s listed %d times by Order", c.name, c.n)
			}
		}
		return nil
	}
}
