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

// Recipe returns l in the documented order of a route's layers, outermost
// first (see the package documentation for why): the order of a route
// whose Order is nil. A route that needs another order returns its own
// list from Route.Order instead.
func Recipe(l Layers) []portico.Middleware {
	var mws []portico.Middleware
	for _, f := range l.fields() {
		mws = append(mws, *f.mw)
	}
	return mws
}

// field is one layer of a Layers, named as an Order error names it.
type field struct {
	name string
	mw   *portico.Middleware
}

// fields returns l's layers in Recipe's order, each with its name.
func (l *Layers) fields() []field {
	var fs []field
	for i := range l.Middleware {
		fs = append(fs, field{fmt.Sprintf("Middleware[%d]", i), &l.Middleware[i]})
	}
	fs = append(fs,
		field{"Unserved", &l.Unserved}, // before anything is spent on the call
		field{"Hedge", &l.Hedge},       // above everything that spends capacity
		field{"Limiter", &l.Limiter},
		field{"Breaker", &l.Breaker}, // one outcome per call
		field{"Retry", &l.Retry},
		field{"Attempt", &l.Attempt},
		field{"Validate", &l.Validate}, // an invalid answer is one failed attempt
		field{"Throttle", &l.Throttle}, // every attempt a request, a refused schema not a refusal
		field{"NotServed", &l.NotServed},
	)
	for i := range l.ModelMiddleware {
		fs = append(fs, field{fmt.Sprintf("ModelMiddleware[%d]", i), &l.ModelMiddleware[i]})
	}
	return fs
}

// count is how often Chain applied one layer of a Route.Order (tally).
type count struct {
	name string
	n    int
}

// tally returns l with each non-nil layer wrapped to count how often
// Chain applies it (the Model it returns is the layer's own, so a call
// costs nothing more), and the check that a Route.Order's result was
// chained with each exactly once (once).
func tally(l Layers) (Layers, func() error) {
	l.Middleware, l.ModelMiddleware = slices.Clone(l.Middleware), slices.Clone(l.ModelMiddleware)
	var counts []*count
	for _, f := range l.fields() {
		if inner := *f.mw; inner != nil {
			c := &count{name: f.name}
			counts = append(counts, c)
			*f.mw = func(m portico.Model) portico.Model { c.n++; return inner(m) }
		}
	}
	return l, func() error { return once(counts) }
}

// once returns an error naming the first layer of counts left out or
// repeated, or nil.
func once(counts []*count) error {
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
