package fallback

import (
	"context"
	"errors"
	"time"

	"github.com/portico-llm/portico"
)

// Group is an ordered group of routes that answers a request with the first
// route that can: a [portico.Model] over several Models. It is built by [New],
// is safe for concurrent use, and keeps no per-request state between calls.
type Group struct {
	cfg Config
	// With a Ranker: what the group learnt about each route (see
	// Candidate.Latency and SinceFailure), on a monotonic clock from base.
	stats []routeStats
	base  time.Time
	// scaled: Config.Reserve was zero, so each request's reserve is
	// scaledReserve of its remaining time, capped at cfg.Reserve.
	scaled bool
}

// New returns a Group over cfg.Routes. It returns an error, whose message
// starts with "fallback:", when Routes is empty, a route has no Name or a nil
// Model, two routes share a Name, Share is outside (0, 1], or Independence is
// not one of the constants.
func New(cfg Config) (*Group, error) {
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	g := &Group{cfg: c, scaled: cfg.Reserve == 0}
	if c.Ranker != nil {
		g.stats = make([]routeStats, len(c.Routes))
		g.base = time.Now()
	}
	return g, nil
}

// MustNew is like [New] but panics on a configuration error.
func MustNew(cfg Config) *Group {
	g, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return g
}

// Routes returns a copy of the group's routes, in configured order.
func (g *Group) Routes() []portico.Route {
	return append([]portico.Route(nil), g.cfg.Routes...)
}

// call is the state of one request through the group.
type call struct {
	req       *portico.Request
	est       int     // estimated input tokens; -1 until first needed
	learned   int     // least input size routes taught (a context overflow), 0 if none
	spent     float64 // estimated cost of failed calls that were likely billed
	billed    float64 // realised cost of failed calls whose error carried Usage
	hops      []portico.Hop
	primary   *portico.Route
	idx       int  // Config.Routes index of the route being tried
	delivered bool // a chunk reached the caller
	noTime    bool // the search stopped for lack of time
	hasDL     bool
	deadline  time.Time
	reserve   time.Duration // kept back before the deadline, when hasDL
	order     []Candidate   // with a Ranker; nil means Routes order
}

// Generate implements [portico.Model]: it tries the group's candidates in
// order and returns the first answer, with Response.Route naming the route that
// answered, Response.Hops the routes left before it with why, and Response.Cost
// what the request cost: the answering route's cost (Response.Cost when an
// inner layer priced it, else the route's Capabilities.Cost of
// Response.Usage) plus, for each route left with an error that carries the
// usage it billed (a [*portico.Error] with Usage set, such as package
// validate's rejection of an answer), that route's Capabilities.Cost of it.
// When the
// route is itself a routing layer (a nested Group, a router of package route)
// the hops it reports follow the group's own, as package route does.
//
// For each request, a route is a candidate when [portico.Capabilities.Fits]
// accepts the request (with its input estimated by Config.Estimator, raised by
// what earlier routes taught), the route is Available (its breaker is not
// open), its estimated cost fits what Contract.MaxCost leaves after failed
// calls that were billed (any whose error carries Usage, at that usage's cost)
// or likely billed (InvalidResponse and Ambiguous ones without it, at their
// estimate), and it
// meets Config.Independence.
//
// It moves to the next candidate after a failure of class Transient or
// RateLimited (the route's own retry layer has given up), Rejected (a breaker
// open, a limiter refusing: never queue), Incompatible (a context overflow,
// shown by Code "context_length_exceeded" or Reason "context window", teaches
// the group that the input needs a larger window than the failed route's, so
// routes of that size are skipped too), InvalidResponse, Deadline while the
// caller's own deadline has not passed, Ambiguous unless the request sets
// NoAmbiguousRetry, and any class when the candidate's own share of the
// time ran out while the caller's deadline had not (the group ends the
// candidate's context with cause [ErrShareTimeout], a
// [portico.ErrLayerTimeout], so the route reports Ambiguous or Transient and
// its breaker counts the failure; the group moves on even for a request with
// NoAmbiguousRetry, since the split exists to reach the fallback after a
// stalled primary, seed 003). It returns the route's
// error, without trying others, on Permanent, Canceled, Ambiguous with
// NoAmbiguousRetry, or any error after a chunk reached the caller (seed
// 000: no transparent fallback after the first token): unchanged when no route
// was left before it (neither tried nor skipped), otherwise as a copy of its [*portico.Error] (same
// Class, Status, Code, RetryAfter) whose Err is a Stopped [*Exhausted] listing
// the routes left before it and then it, so errors.Is still reaches the
// route's error but not [ErrExhausted]. A route that returns neither an answer
// nor an error counts as having failed with [portico.ErrNilResponse] (class
// InvalidResponse). A nil *Request is refused with [portico.ErrNilRequest]
// (class Permanent) before any route is looked at.
//
// A positive Contract.Deadline first bounds ctx with a timeout of that length.
// When the context has a deadline, each candidate gets its own (see
// Config.Share, Config.Reserve, Config.MinAttempt); a candidate is not started
// when its allowance is below MinAttempt. When the caller's own deadline ends
// during a candidate, the group stops there. Each route left is reported as a
// [portico.EventFallback] to the context's Observer.
//
// When every candidate was left, it returns a [*portico.Error] wrapping
// [*Exhausted] (and so [ErrExhausted]) with every hop; when none was called
// (each filtered out, unavailable or out of time) its message says that no
// route can serve the request and names each route's unmet need, and its
// NotSent is set, as on the context's error when the group called no route
// before the caller's context ended. Its Class is the
// highest-ranked class among the hops, in the order Ambiguous > Transient >
// Deadline > InvalidResponse > RateLimited > Rejected > Incompatible, where a
// route skipped unasked counts as Rejected when unavailable, Deadline when no
// time was left for it, and Incompatible otherwise. So: a possibly billed call
// is never hidden; a route fault says retry later with backoff; Deadline says
// more time could have helped; RateLimited and Rejected (with the smallest
// RetryAfter among the hops) say come back later; Incompatible is returned only
// when nothing could serve the request as it is. If the caller's context is done
// when the group gives up, the error is of class Canceled (the context's) or
// Deadline instead; but when the deadline ended it and a hop was Ambiguous (a
// candidate that ran out its share after sending, say), the class stays
// Ambiguous: a possibly billed call is never hidden.
func (g *Group) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if req == nil {
		return nil, portico.ErrNilRequest
	}
	c := call{req: req, est: -1}
	if k := req.Contract; k != nil && k.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, k.Deadline)
		defer cancel()
	}
	c.deadline, c.hasDL = ctx.Deadline()
	if c.hasDL {
		c.reserve = g.cfg.Reserve
		if g.scaled { // fixed at entry: the point kept back is deadline - reserve
			c.reserve = scaledReserve(time.Until(c.deadline), g.cfg.Reserve)
		}
	}
	routes := g.cfg.Routes
	n := len(routes)
	if g.cfg.Ranker != nil {
		c.order = g.rank(ctx, &c)
		n = len(c.order)
	}
	for pos := range n {
		r := g.route(&c, pos)
		c.idx = pos
		if c.order != nil {
			c.idx = c.order[pos].Index
		}
		if pos == 0 {
			c.primary = r
		}
		if reason := g.skip(&c, r); reason != "" {
			g.hop(ctx, &c, r, reason, nil)
			continue
		}
		resp, stop, err := g.try(ctx, &c, r, pos)
		if err == nil {
			resp.Route = r.Name
			if c.hops != nil { // after the hops of an inner routing layer, if any
				resp.Hops = append(c.hops, resp.Hops...)
			}
			if resp.Cost == 0 {
				resp.Cost = r.Capabilities.Cost(resp.Usage)
			}
			resp.Cost += c.billed
			return resp, nil
		}
		if stop {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, g.outOfTime(ctx, &c)
		}
		if noneCalled(c.hops) {
			return nil, unsent(portico.FromContext(ctx))
		}
		return nil, portico.FromContext(ctx)
	}
	return nil, exhausted(c.hops)
}

// route returns the candidate at position pos of the request's order.
func (g *Group) route(c *call, pos int) *portico.Route {
	if c.order != nil {
		return c.order[pos].Route
	}
	return &g.cfg.Routes[pos]
}

// skip returns why r is not a candidate now, or "".
func (g *Group) skip(c *call, r *portico.Route) string {
	in := c.learned
	if r.Capabilities.ContextWindow > 0 || (c.req.Contract != nil && c.req.Contract.MaxCost > 0) {
		in = g.input(c) // only the window and cost checks use it
	}
	if err := r.Capabilities.Fits(c.req, in); err != nil {
		var pe *portico.Error
		if errors.As(err, &pe) {
			return pe.Reason
		}
		return "incompatible"
	}
	if !r.Available() {
		return reasonUnavailable
	}
	if k := c.req.Contract; k != nil && k.MaxCost > 0 && c.spent > 0 && c.spent+g.estimate(c, r) > k.MaxCost {
		return reasonBudget
	}
	if p := c.primary; p != nil && p != r && !independent(g.cfg.Independence, &p.Capabilities, &r.Capabilities) {
		return reasonIndependent
	}
	return ""
}

// input returns the request's estimated input tokens, raised to what routes
// taught. The estimator runs once per request, when first needed.
func (g *Group) input(c *call) int {
	if c.est < 0 {
		c.est = g.cfg.Estimator.EstimateInputTokens(c.req)
	}
	return max(c.est, c.learned)
}

// estimate is r's price for the request before the call, as Fits computes it.
func (g *Group) estimate(c *call, r *portico.Route) float64 {
	return r.Capabilities.EstimateCost(c.req, g.input(c))
}

// independent reports whether a fallback with capabilities f meets the
// requirement against the primary p. Unknown (empty) fields exclude nothing.
func independent(req Independence, p, f *portico.Capabilities) bool {
	sameProvider := p.Provider != "" && p.Provider == f.Provider
	switch req {
	case OtherProvider:
		return !sameProvider
	case OtherRegion:
		return !sameProvider || p.Region == "" || p.Region != f.Region
	}
	return true
}

// hop records that the request left r for reason, with err (nil when skipped).
func (g *Group) hop(ctx context.Context, c *call, r *portico.Route, reason string, err error) {
	h := portico.Hop{Route: r.Name, Reason: reason, Err: err}
	c.hops = append(c.hops, h)
	portico.Observe(ctx, portico.Event{Kind: portico.EventFallback, Route: r.Name, Class: hopClass(h), Reason: reason})
	if l := g.cfg.Logger; l != nil {
		l.InfoContext(ctx, "fallback left route", "route", r.Name, "reason", reason, "class", hopClass(h).String())
	}
}

// rank builds the candidates that pass the filter now and asks the Ranker
// for their order. Routes filtered out are recorded as hops.
func (g *Group) rank(ctx context.Context, c *call) []Candidate {
	routes := g.cfg.Routes
	cands := make([]Candidate, 0, len(routes))
	now := g.clock()
	for i := range routes {
		r := &routes[i]
		if reason := g.skip(c, r); reason != "" {
			g.hop(ctx, c, r, reason, nil)
			continue
		}
		cd := Candidate{Index: i, Route: r, EstimatedCost: g.estimate(c, r)}
		g.stats[i].fill(&cd, now)
		cands = append(cands, cd)
	}
	ranked := g.cfg.Ranker(Ranking{Request: c.req, InputTokens: g.input(c), Candidates: cands})
	order := make([]Candidate, 0, len(ranked))
	seen := make([]bool, len(routes))
	for _, cd := range ranked {
		if cd.Index < 0 || cd.Index >= len(routes) || seen[cd.Index] {
			continue
		}
		seen[cd.Index] = true
		cd.Route = &routes[cd.Index]
		order = append(order, cd)
	}
	for _, cd := range cands {
		if !seen[cd.Index] {
			g.hop(ctx, c, cd.Route, reasonNotRanked, nil)
		}
	}
	if len(order) == 0 {
		return []Candidate{} // non-nil: nothing to try
	}
	return order
}

// clock reads the group's monotonic clock, in nanoseconds since New.
func (g *Group) clock() int64 { return int64(time.Since(g.base)) }
