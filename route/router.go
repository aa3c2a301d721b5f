package route

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// Candidate is what a [Policy] sees of one route that fits the request and is
// available. Pointers in it are owned by the [Router]; a Policy reads them only
// during the call.
type Candidate struct {
	// Index is the route's position in RouterConfig.Routes.
	Index int
	// Route is the route itself.
	Route *portico.Route
	// EstimatedCost is the price of the request on this route before the call,
	// in the Capabilities' price unit, as Fits prices Contract.MaxCost: input
	// tokens (the larger of the estimate and Contract.MaxInputTokens) at
	// InputPrice plus MaxOutputTokens at OutputPrice (0 when it is 0).
	EstimatedCost float64
	// Latency is the EWMA of observed call latencies; 0 before the first
	// completed call, so unobserved routes look fast and get explored.
	Latency time.Duration
	// TTFT is the EWMA of observed times to first streamed chunk; 0 before the
	// first streamed call.
	TTFT time.Duration
	// ErrorRate is the EWMA, in [0, 1], of outcomes counted as the route's fault
	// ([portico.Class.RouteFault]): 1 per such failure, 0 per success. Caller
	// cancellations, deadlines and incompatibilities do not move it.
	ErrorRate float64
	// InFlight is the number of calls placed on the route and not yet done.
	InFlight int
	// Observed is the number of completed calls fed back so far.
	Observed int
	// Weight is the route's static preference from RouterConfig.Weights, > 0;
	// 1 by default. Built-in policies divide their score by it.
	Weight float64
}

// Policy ranks the candidates of a [Router]: it returns a score for c, and the
// candidate with the lowest score wins (the earliest route on a tie; a NaN
// score ranks as +Inf). A Policy
// must be pure and fast, never block, and be safe for concurrent use.
type Policy func(c Candidate) float64

// ByCost ranks by estimated price of the request, divided by weight: the
// cheapest capable route wins. It is the Router's default.
func ByCost(c Candidate) float64 { return c.EstimatedCost / c.Weight }

// ByLatency ranks by latency EWMA in seconds, divided by weight.
func ByLatency(c Candidate) float64 { return c.Latency.Seconds() / c.Weight }

// ByHealth ranks by error-rate EWMA, then by calls in flight (a tenth of a
// failure each, breaking ties toward idle routes), divided by weight. Routes
// whose breaker is open were already filtered out as unavailable.
func ByHealth(c Candidate) float64 {
	return (c.ErrorRate + 0.1*float64(c.InFlight)) / c.Weight
}

// Weighted is a [Policy] that adds its terms, each a coefficient times a
// Candidate field, and divides the sum by the candidate's weight. A zero
// coefficient drops its term; the zero Weighted scores every route 0, so the
// first route wins.
type Weighted struct {
	Cost      float64 // per price unit of EstimatedCost
	Latency   float64 // per second of latency EWMA
	TTFT      float64 // per second of TTFT EWMA
	ErrorRate float64 // per unit of error-rate EWMA (0..1)
	InFlight  float64 // per call in flight
}

// Score returns the weighted sum described on [Weighted]; w.Score is a Policy.
func (w Weighted) Score(c Candidate) float64 {
	s := w.Cost*c.EstimatedCost + w.Latency*c.Latency.Seconds() + w.TTFT*c.TTFT.Seconds() +
		w.ErrorRate*c.ErrorRate + w.InFlight*float64(c.InFlight)
	return s / c.Weight
}

// RouterConfig configures a [Router].
type RouterConfig struct {
	// Routes are the candidates, in order of preference on ties. At least one,
	// each with a non-nil Model.
	Routes []portico.Route
	// Policy ranks the fitting, available routes; nil means [ByCost].
	Policy Policy
	// Weights are static preferences per route, same length as Routes, each > 0;
	// nil means 1 for every route.
	Weights []float64
	// Alpha is the EWMA smoothing factor in (0, 1] for latency, TTFT and error
	// rate: new = Alpha*sample + (1-Alpha)*old. Zero means 0.2 (about the last
	// ten calls weigh most).
	Alpha float64
	// Estimator predicts input tokens for Fits and EstimatedCost; nil means
	// portico.DefaultEstimator.
	Estimator portico.Estimator
}

// Router is a general router over N routes: for each request it keeps the
// routes that fit it ([portico.Capabilities.Fits], the filter fallback shares)
// and are available ([portico.Route.Available], i.e. breaker not open), ranks
// them with a [Policy] over cost, latency and TTFT EWMAs, error rate, load and
// static weights (seed 003: filter by capability, then rank by health, latency,
// cost), and calls the best one.
//
// [Router.Pick] is a grpc-go-style picker: it never blocks, takes and returns
// structs, and its result's Done feeds the outcome back into the statistics.
// Router is safe for concurrent use; [Router.Generate] is a [portico.Model].
type Router struct {
	routes  []portico.Route
	weights []float64
	stats   []routeStats
	done    []func(DoneInfo)
	policy  Policy
	alpha   float64
	est     portico.Estimator
}

type routeStats struct {
	latency, ttft, errRate atomicFloat
	inFlight               atomic.Int64
	observed, ttftSeen     atomic.Int64
}

// atomicFloat is a float64 updated with compare-and-swap.
type atomicFloat struct{ v atomic.Uint64 }

func (a *atomicFloat) load() float64 { return math.Float64frombits(a.v.Load()) }

// ewma folds x into the average; first sets it outright.
func (a *atomicFloat) ewma(x, alpha float64, first bool) {
	for {
		old := a.v.Load()
		nv := x
		if !first {
			nv = alpha*x + (1-alpha)*math.Float64frombits(old)
		}
		if a.v.CompareAndSwap(old, math.Float64bits(nv)) {
			return
		}
	}
}

// NewRouter returns a Router for cfg, or an error starting "route:" when there
// are no routes, a route has no Model or invalid Capabilities
// ([portico.Capabilities.Validate]), Weights has the wrong length or a
// non-positive entry, or Alpha is outside [0, 1].
func NewRouter(cfg RouterConfig) (*Router, error) {
	n := len(cfg.Routes)
	if n == 0 {
		return nil, errors.New("route: NewRouter needs at least one route")
	}
	for i := range cfg.Routes {
		if cfg.Routes[i].Model == nil {
			return nil, errors.New("route: NewRouter route " + cfg.Routes[i].Name + " has a nil Model")
		}
	}
	if err := checkCapabilities("NewRouter", cfg.Routes...); err != nil {
		return nil, err
	}
	if cfg.Weights != nil && len(cfg.Weights) != n {
		return nil, errors.New("route: NewRouter Weights must have one entry per route")
	}
	if !(cfg.Alpha >= 0 && cfg.Alpha <= 1) {
		return nil, errors.New("route: NewRouter Alpha outside [0, 1]")
	}
	r := &Router{
		routes:  append([]portico.Route(nil), cfg.Routes...),
		weights: make([]float64, n),
		stats:   make([]routeStats, n),
		done:    make([]func(DoneInfo), n),
		policy:  cfg.Policy,
		alpha:   cfg.Alpha,
		est:     cfg.Estimator,
	}
	for i := range r.weights {
		r.weights[i] = 1
		if cfg.Weights != nil {
			if !(cfg.Weights[i] > 0) {
				return nil, errors.New("route: NewRouter weights must be > 0")
			}
			r.weights[i] = cfg.Weights[i]
		}
		r.done[i] = func(d DoneInfo) { r.feedback(i, d) }
	}
	if r.policy == nil {
		r.policy = ByCost
	}
	if r.alpha == 0 {
		r.alpha = 0.2
	}
	if r.est == nil {
		r.est = portico.DefaultEstimator
	}
	return r, nil
}

// Pick chooses the route for info.Request: the fitting, available route with
// the lowest Policy score, the earliest on a tie. It counts the call in flight
// on that route; the caller must call the result's Done once the call ends. It
// never blocks, and when a route is found it does not allocate (the Fits
// rejections of the routes passed over are shared values); only the no-route
// error, which lists every route's reason, allocates. Errors: an
// [*portico.Error] wrapping [ErrNoRoute] when no route fits and is available
// (Class as ErrNoRoute says); a Permanent one when info.Request is nil.
func (r *Router) Pick(info PickInfo) (PickResult, error) {
	req := info.Request
	if req == nil {
		return PickResult{Index: -1}, errNilRequest
	}
	n := estimate(r.est, &info)
	best, bestScore := -1, math.Inf(1)
	for i := range r.routes {
		rt := &r.routes[i]
		if rt.Capabilities.Fits(req, n) != nil || !rt.Available() {
			continue
		}
		st := &r.stats[i]
		c := Candidate{
			Index:         i,
			Route:         rt,
			EstimatedCost: rt.Capabilities.EstimateCost(req, n),
			Latency:       time.Duration(st.latency.load()),
			TTFT:          time.Duration(st.ttft.load()),
			ErrorRate:     st.errRate.load(),
			InFlight:      int(st.inFlight.Load()),
			Observed:      int(st.observed.Load()),
			Weight:        r.weights[i],
		}
		s := r.policy(c)
		if s != s {
			s = math.Inf(1) // NaN ranks last, not first
		}
		if best < 0 || s < bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		hops := make([]portico.Hop, 0, len(r.routes))
		for i := range r.routes {
			h, _ := check(&r.routes[i], req, n)
			hops = append(hops, h)
		}
		return PickResult{Index: -1}, noRoute(hops)
	}
	r.stats[best].inFlight.Add(1)
	return PickResult{Index: best, Done: r.done[best]}, nil
}

// feedback folds one finished call into route i's statistics.
func (r *Router) feedback(i int, d DoneInfo) {
	st := &r.stats[i]
	st.inFlight.Add(-1)
	class := portico.ClassOf(d.Err)
	if class == portico.Canceled || class == portico.Deadline || class == portico.Incompatible {
		return // says nothing about the route's speed or health
	}
	first := st.observed.Add(1) == 1
	st.latency.ewma(float64(d.Latency), r.alpha, first)
	fault := 0.0
	if class.RouteFault() {
		fault = 1
	}
	st.errRate.ewma(fault, r.alpha, first)
	if d.TTFT > 0 {
		st.ttft.ewma(float64(d.TTFT), r.alpha, st.ttftSeen.Add(1) == 1)
	}
}

// Stats returns route i's statistics as a [Candidate] would see them, without
// the request-dependent EstimatedCost; for tests, metrics and debugging.
func (r *Router) Stats(i int) Candidate {
	st := &r.stats[i]
	return Candidate{
		Index: i, Route: &r.routes[i], Weight: r.weights[i],
		Latency: time.Duration(st.latency.load()), TTFT: time.Duration(st.ttft.load()),
		ErrorRate: st.errRate.load(), InFlight: int(st.inFlight.Load()), Observed: int(st.observed.Load()),
	}
}

// Generate picks a route with [Router.Pick], calls it, and feeds back latency,
// TTFT (when streaming) and the outcome. The Response's Route names the route
// and Cost is its Capabilities.Cost of the usage. Errors: the chosen route's
// error unchanged (an InvalidResponse one if it returned neither answer nor
// error), or Pick's error. A panic in the route's Model is fed back as a
// failure and then goes on up. A Router does not fall back: put a fallback
// layer around it, or use a [Cascade].
func (r *Router) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	pr, err := r.Pick(PickInfo{Request: req})
	if err != nil {
		return nil, err
	}
	rt := &r.routes[pr.Index]
	resp, d := guardedCall(ctx, rt.Model, rt.RequestFor(req), pr.Done)
	if d.Err != nil {
		return nil, d.Err
	}
	resp.Route = rt.Name
	resp.Cost = rt.Capabilities.Cost(resp.Usage)
	return resp, nil
}

// guardedCall is call followed by done(d); if m panics, done gets [errPanic]
// before the panic goes on, so in-flight counts are never leaked.
func guardedCall(ctx context.Context, m portico.Model, req *portico.Request, done func(DoneInfo)) (*portico.Response, DoneInfo) {
	ok := false
	defer func() {
		if !ok {
			done(DoneInfo{Err: errPanic})
		}
	}()
	resp, d := call(ctx, m, req)
	ok = true
	done(d)
	return resp, d
}

// call runs m on req, timing it; when req streams, it wraps OnChunk on a copy
// of req to time the first chunk (two allocations, only when streaming).
func call(ctx context.Context, m portico.Model, req *portico.Request) (*portico.Response, DoneInfo) {
	start := time.Now()
	var tm *chunkTimer
	if req.OnChunk != nil {
		tm = &chunkTimer{req: *req, orig: req.OnChunk, start: start}
		tm.req.OnChunk = tm.onChunk
		req = &tm.req
	}
	resp, err := m.Generate(ctx, req)
	d := DoneInfo{Err: err, Latency: time.Since(start)}
	if tm != nil {
		d.TTFT = tm.ttft
	}
	if err == nil {
		if resp == nil {
			d.Err = &portico.Error{Class: portico.InvalidResponse, Reason: "nil response"}
			return nil, d
		}
		d.Usage = resp.Usage
	}
	return resp, d
}

// chunkTimer holds a streaming call's copy of the request and times its first
// chunk.
type chunkTimer struct {
	req   portico.Request
	orig  func(portico.Chunk) error
	start time.Time
	ttft  time.Duration
}

func (t *chunkTimer) onChunk(c portico.Chunk) error {
	if t.ttft == 0 {
		t.ttft = max(time.Since(t.start), 1)
	}
	return t.orig(c)
}
