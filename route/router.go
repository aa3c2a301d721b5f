package route

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
	"github.com/portico-llm/portico/internal/rules"
	"github.com/portico-llm/portico/rank"
)

// RouterConfig configures a [Router].
type RouterConfig struct {
	// Routes are the candidates, in order of preference on ties. At least one,
	// each with a non-nil Model.
	Routes []portico.Route
	// Policy ranks the fitting, available routes: the lowest score wins,
	// the earliest route on a tie. Nil means [rank.ByCost], or
	// [rank.Split] when Weights are set: weights 7:3 send 70% and 30% of
	// the calls, whatever the prices.
	Policy rank.Policy
	// Weights are static preferences per route, same length as Routes, each > 0;
	// nil means 1 for every route. The built-in policies divide their
	// score by the route's weight; [rank.Split] draws with it.
	Weights []float64
	// Alpha is the moving averages' gain in (0, 1] for latency, TTFT and
	// error rate: new = Alpha*sample + (1-Alpha)*old. Zero means
	// [rank.DefaultAlpha] (1/8).
	Alpha float64
	// Estimator predicts input tokens for Fits and EstimatedCost; nil means
	// portico.DefaultEstimator.
	Estimator portico.Estimator
}

// Router is a general router over N routes: for each request it keeps the
// routes that fit it ([portico.Capabilities.Fits], the filter fallback shares)
// and are available ([portico.Route.Available], i.e. breaker not open), ranks
// them with a [rank.Policy] over cost, latency and TTFT averages, error rate,
// last failure, load and static weights (filter by capability, then rank by
// health, latency, cost), and calls the best one.
//
// [Router.Pick] is a grpc-go-style picker: it never blocks, takes and returns
// structs, and its result's Done feeds the outcome back into the statistics.
// Router is safe for concurrent use; [Router.Generate] is a [portico.Model].
type Router struct {
	routes  []portico.Route
	weights []float64
	stats   *rank.Table
	done    []func(DoneInfo)
	policy  rank.Policy
	est     portico.Estimator
}

// NewRouter returns a Router for cfg, or an error starting "route:" when there
// are no routes, a route has no Model or invalid Capabilities
// ([portico.Capabilities.Validate]), Weights has the wrong length or a
// non-positive entry, or Alpha is outside [0, 1].
func NewRouter(cfg RouterConfig) (*Router, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	n := len(cfg.Routes)
	stats, _ := rank.NewTable(n, cfg.Alpha) // Alpha checked above
	r := &Router{
		routes:  append([]portico.Route(nil), cfg.Routes...),
		weights: make([]float64, n),
		stats:   stats,
		done:    make([]func(DoneInfo), n),
		policy:  cfg.Policy,
		est:     cmp.Or(cfg.Estimator, portico.DefaultEstimator),
	}
	copy(r.weights, cfg.Weights) // none: 0, which the Table's Fill makes 1
	for i := range r.done {
		r.done[i] = func(d DoneInfo) { r.stats.Done(i, d.Err, d.Latency, d.TTFT) }
	}
	if r.policy == nil {
		r.policy = rank.ByCost
		if cfg.Weights != nil {
			r.policy = rank.Split
		}
	}
	return r, nil
}

// check returns NewRouter's error for cfg, or nil.
func (cfg *RouterConfig) check() error {
	if len(cfg.Routes) == 0 {
		return errors.New("route: NewRouter needs at least one route")
	}
	return cmp.Or(checkModels("NewRouter", "route", cfg.Routes), checkCapabilities("NewRouter", cfg.Routes...), rules.First(
		rules.If(cfg.Weights != nil && len(cfg.Weights) != len(cfg.Routes), "route: NewRouter Weights must have one entry per route"),
		rules.If(!(cfg.Alpha >= 0 && cfg.Alpha <= 1), "route: NewRouter Alpha outside [0, 1]"),
		rules.If(slices.ContainsFunc(cfg.Weights, func(w float64) bool { return !(w > 0) }), "route: NewRouter weights must be > 0"),
	))
}

// Pick chooses the route for info.Request: the fitting, available route with
// the lowest Policy score, the earliest on a tie. It counts the call in flight
// on that route; the caller must call the result's Done once the call ends. It
// never blocks, and when a route is found it does not allocate (the Fits
// rejections of the routes passed over are shared values); only the no-route
// error, which lists every route's reason, allocates. Errors: an
// [*portico.Error] wrapping [ErrNoRoute] when no route fits and is available
// (Class as ErrNoRoute says); a Permanent one when info.Request is nil or
// wrong on any route (Fits' Permanent error: a malformed Contract, a
// negative token count), returned at once.
func (r *Router) Pick(info PickInfo) (PickResult, error) {
	req := info.Request
	if req == nil {
		return PickResult{Index: -1}, errNilRequest
	}
	n := estimate(r.est, &info)
	best, err := r.best(req, n)
	if err != nil {
		return PickResult{Index: -1}, err
	}
	r.stats.Start(best)
	return PickResult{Index: best, Done: r.done[best]}, nil
}

// best returns the fitting, available route of least score for req, n
// tokens, or the error of a request wrong on any route or of none found.
func (r *Router) best(req *portico.Request, n int) (int, error) {
	best, bestScore := -1, math.Inf(1)
	for i := range r.routes {
		rt := &r.routes[i]
		if _, ok, stop := check(rt, req, n); stop != nil {
			return -1, stop // wrong on any route
		} else if !ok {
			continue
		}
		c := rank.Candidate{Index: i, Route: rt, EstimatedCost: rt.Capabilities.EstimateCost(req, n), Weight: r.weights[i]}
		r.stats.Fill(&c)
		if s := r.policy.Score(c); best < 0 || s < bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return -1, r.noRoute(req, n)
	}
	return best, nil
}

// noRoute is Pick's error when no route fits req, n tokens, and is available.
func (r *Router) noRoute(req *portico.Request, n int) error {
	var sk skips
	for i := range r.routes {
		h, _, _ := check(&r.routes[i], req, n)
		sk.add(&r.routes[i], h)
	}
	return noRoute(sk.hops, sk.wait)
}

// Stats returns route i's figures as a [rank.Candidate] would see them,
// without the request-dependent EstimatedCost; for tests, metrics and
// debugging.
func (r *Router) Stats(i int) rank.Candidate {
	c := rank.Candidate{Index: i, Route: &r.routes[i], Weight: r.weights[i]}
	r.stats.Fill(&c)
	return c
}

// Generate picks a route with [Router.Pick], calls it, and feeds back
// latency, TTFT (when streaming) and the outcome. The answer is stamped with
// [portico.Route.Stamp]: Route names the route, Cost is an inner layer's
// Cost or else the route's price of the usage. Errors: the chosen route's
// error unchanged, one matching [portico.ErrNilResponse] (InvalidResponse)
// when it returned neither answer nor error, or Pick's error. A panic in the
// route's Model is fed back as a failure and then goes on up. A Router does
// not fall back: put a fallback layer around it, or use a [Cascade].
func (r *Router) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	return pickAndCall(ctx, req, r.Pick, func(i int) *portico.Route { return &r.routes[i] })
}

// pickAndCall picks a route, at(index), calls it and stamps its answer.
func pickAndCall(ctx context.Context, req *portico.Request, pick func(PickInfo) (PickResult, error), at func(int) *portico.Route) (*portico.Response, error) {
	if err := portico.Gone(ctx); err != nil {
		return nil, err // the caller has gone: no route is picked or called
	}
	pr, err := pick(PickInfo{Request: req})
	if err != nil {
		return nil, err
	}
	rt := at(pr.Index)
	resp, d := guardedCall(ctx, rt, req, pr.Done)
	if d.Err != nil {
		return nil, d.Err
	}
	return rt.Stamp(resp, nil, 0), nil
}

// guardedCall is call followed by done(d); if the route's Model panics, done
// gets [errPanic] before the panic goes on, so in-flight counts are never
// leaked.
func guardedCall(ctx context.Context, rt *portico.Route, req *portico.Request, done func(DoneInfo)) (*portico.Response, DoneInfo) {
	ok := false
	defer func() {
		if !ok {
			done(DoneInfo{Err: errPanic})
		}
	}()
	resp, d := call(ctx, rt, req)
	ok = true
	done(d)
	return resp, d
}

// call runs rt's Model on rt.RequestFor(req), timing it; when req streams, a
// [portico.StreamWatch] times the first chunk (one allocation for the timer
// and its copy of the request, one for the watch's OnChunk).
func call(ctx context.Context, rt *portico.Route, req *portico.Request) (*portico.Response, DoneInfo) {
	start := mono.Now()
	var tm *chunkTimer
	if req.OnChunk != nil {
		tm = &chunkTimer{start: start}
		w := tm.Watch(req, tm)
		if rt.ModelName != "" {
			w.Model = rt.ModelName
		}
		req = w
	} else {
		req = rt.RequestFor(req)
	}
	resp, err := rt.Model.Generate(ctx, req)
	d := DoneInfo{Err: answered(rt, resp, err), Latency: mono.Now() - start}
	if tm != nil {
		d.TTFT = tm.ttft
	}
	if d.Err == nil {
		d.Usage = resp.Usage
	}
	return resp, d
}

// chunkTimer watches a streaming call and times its first chunk.
type chunkTimer struct {
	portico.StreamWatch
	start time.Duration // mono.Now
	ttft  time.Duration
}

// GateChunk passes the first chunk on, noting when, and ungates the watch.
func (t *chunkTimer) GateChunk(_ portico.Chunk, delivered bool) (bool, error) {
	if !delivered {
		t.ttft = max(mono.Now()-t.start, 1)
		t.Ungate()
	}
	return true, nil
}
