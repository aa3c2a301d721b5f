package stack

import "github.com/portico-llm/portico"

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
