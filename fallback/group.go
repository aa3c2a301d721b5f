package fallback

import (
	"cmp"
	"context"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/internal/due"
	"github.com/portico-llm/portico/rank"
)

// Group is an ordered group of routes that answers a request with the first
// route that can: a [portico.Model] over several Models. It is built by [New],
// is safe for concurrent use, and keeps no per-request state between calls.
type Group struct {
	cfg Config
	// With a Policy: what the group learnt about each route from its calls
	// (the measured fields of rank.Candidate).
	stats *rank.Table
	// scaled: Config.Reserve was zero, so each request's reserve is
	// scaledReserve of its remaining time, capped at cfg.Reserve.
	scaled bool
	// With Config.Hedge: each route's latency, for the delay of a hedge
	// after it.
	latency []hedge.Latency
	// cool holds the cooldowns, keyed by keys[i] for route i: its
	// Capabilities.Quota, else its Name.
	cool   portico.Cooldowns
	shared SharedCooldowns // cool, when it is one; else nil
	keys   []string
	// values[i] are route i's share values (see shareValues).
	values []shareValues
	// covers[i] has bit j set when route j's Capabilities cover route i's
	// (portico.Capabilities.Covers): a request that fit route i fits route j
	// without Fits (see request.skip). Nil with more than 64 routes.
	covers []uint64
}

// shareValues are the values of one route's shares, made once so that a
// share costs no allocation for them: the route's cooldown
// ([portico.ContextWithCooldown] over the group's Cooldowns and the route's
// key, so that its retry layer does not call it while it cools down) and,
// when another candidate follows ([1]), Config.WaitInPlace
// ([portico.ContextWithMaxWait]) unless it is negative.
type shareValues [2]context.Context

// newShareValues returns the values of a route whose cooldown is until,
// with wait as the cap on a wait in place (negative: none).
func newShareValues(until func() time.Time, wait time.Duration) shareValues {
	last := portico.ContextWithCooldown(context.Background(), until)
	if wait < 0 {
		return shareValues{last, last}
	}
	return shareValues{last, portico.ContextWithMaxWait(last, wait)}
}

// valued is a candidate's context: ctx with a share's values, which shadow
// ctx's. One allocation.
type valued struct {
	context.Context
	values context.Context
}

func (c *valued) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
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
	g := &Group{cfg: c, scaled: cfg.Reserve == 0, cool: c.Cooldowns, keys: make([]string, len(c.Routes))}
	if g.cool == nil {
		g.cool, _ = NewMemoryCooldowns(0)
	}
	g.shared, _ = g.cool.(SharedCooldowns)
	for i, r := range c.Routes {
		key := cmp.Or(r.Capabilities.Quota, r.Name)
		g.keys[i] = key
		g.values = append(g.values, newShareValues(func() time.Time { return g.cool.Until(key) }, c.WaitInPlace))
	}
	g.covers = covers(c.Routes)
	if c.Policy != nil {
		g.stats, _ = rank.NewTable(len(c.Routes), 0)
	}
	if c.Hedge != nil {
		g.latency = make([]hedge.Latency, len(c.Routes))
	}
	return g, nil
}

// covers returns, for each route i, the set of routes whose Capabilities
// cover i's, as bits (see Group.covers); nil with more than 64 routes.
func covers(routes []portico.Route) []uint64 {
	if len(routes) > 64 {
		return nil
	}
	cv := make([]uint64, len(routes))
	for i := range routes {
		for j := range routes {
			if routes[j].Capabilities.Covers(&routes[i].Capabilities) {
				cv[i] |= 1 << j
			}
		}
	}
	return cv
}

// MustNew is like [New] but panics on a configuration error.
func MustNew(cfg Config) *Group { return portico.Must(New(cfg)) }

// Routes returns a copy of the group's routes, in configured order.
func (g *Group) Routes() []portico.Route {
	return append([]portico.Route(nil), g.cfg.Routes...)
}

// Generate implements [portico.Model]: it tries the group's candidates in
// order (Config.Policy's, else the configured one) and returns the first
// answer, stamped with [portico.Route.Stamp]: Route, the Hops left before it,
// and a Cost that includes what routes left with billed usage cost. It moves
// on after failures another route may fix and stops at once, returning the
// route's error, on Permanent, Canceled, Ambiguous on a request that sets
// NoAmbiguousRetry, Unusable with Config.StopOnUnusable, or any error once
// a chunk reached the caller unless the request sets ContinueOnBreak, when
// it continues the answer (the package documentation lists the rules).
// When every candidate was left it returns a [*portico.Error] wrapping
// [*Exhausted] and [ErrExhausted], of the most telling hop's class and
// RefusedBy (a skip for a cooldown is [portico.Cooldown]'s, one for an
// unavailable route [portico.CircuitBreaker]'s). A
// request wrong on any route gets Fits' Permanent error, no route called;
// a route that returns neither answer nor error fails with
// [portico.ErrNilResponse]; a nil req is [portico.ErrNilRequest]; a context
// done already is [portico.Gone]'s error, no route called.
func (g *Group) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := portico.Unstarted(ctx, req); err != nil {
		return nil, err // a nil req, or the caller has gone: no route is called
	}
	ctx, cancel := withContract(ctx, req.Contract)
	defer cancel()
	r := request{g: g, req: req, est: -1}
	// A request that continues broken streams is not hedged: a race
	// delivers one route's chunks and cannot yet continue them.
	if req.ContinueOnBreak && req.OnChunk != nil {
		r.cont = new(continuation)
	} else if h := g.cfg.Hedge; h != nil && h.Applies(req) {
		return g.race(ctx, req)
	}
	return r.run(ctx)
}

// withContract returns ctx bounded by k's Deadline when that ends before
// ctx's own deadline (or the one it carries, package due), and the func to
// call once the request is done.
func withContract(ctx context.Context, k *portico.Contract) (context.Context, context.CancelFunc) {
	if k == nil || k.Deadline <= 0 {
		return ctx, func() {}
	}
	at := time.Now().Add(k.Deadline)
	if dl, ok := due.Deadline(ctx); ok && !at.Before(dl) {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, at)
}
