package stack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/throttle"
	"github.com/portico-llm/portico/trace"
	"github.com/portico-llm/portico/validate"
)

// Route is one destination of a stack and the configuration of the layers
// around it. The zero value of every layer's Config means that layer's
// defaults; set a Skip field to leave a layer out.
type Route struct {
	// Route names the destination and gives its Model (usually a provider
	// adapter such as provider/openai's), Capabilities and ModelName. Its
	// Health is ignored: the stack sets it to the route's breaker.
	portico.Route
	// Limits are the route's per-model limits (requests and tokens per period,
	// in-flight cap), keyed by model (ratelimit.ByModel), so the provider's
	// x-ratelimit-* headers tighten them. The zero Limits means no per-model
	// limiter.
	Limits ratelimit.Limits
	// Queue lets calls beyond the route's in-flight cap (Limits.MaxInFlight,
	// or Concurrency's limit) wait for a slot, as ratelimit.Config.Queue
	// says: up to Queue.Size of them, until a slot frees or their context
	// ends; a hedge is never queued. The zero Queue sheds them at once
	// (Rejected), so a burst above the cap fails fast and the group moves
	// on.
	Queue ratelimit.Queue
	// LimitsShared keeps the route's buckets in a store shared by every
	// instance of the service (package redisstore's Buckets), so the
	// provider's limit holds across them; the zero value keeps them in this
	// process. See [ratelimit.Shared].
	LimitsShared ratelimit.Shared
	// DefaultMaxTokens is N_max, in tokens, for requests without
	// MaxOutputTokens, when Limits has a token bucket. Zero means 1024, or half
	// the token bucket's capacity when that is smaller.
	DefaultMaxTokens int
	// Breaker configures the route's breaker; an empty Name means Route.Name.
	Breaker breaker.Config
	// Retry configures the route's retry layer; an empty Destination means
	// Route.Name, so retry budgets and retry events are per route: each
	// route's retries are bounded by its own budget, shared by every client,
	// as well as by each client's.
	Retry retry.Config
	// Validate configures the route's acceptance pipeline.
	Validate validate.Config
	// SkipBreaker, SkipRetry and SkipValidate leave the layer out.
	SkipBreaker, SkipRetry, SkipValidate bool
	// Hedge, when non-nil, hedges the route's calls to the route itself
	// (package hedge), outside its limiter and breaker so that each hedge
	// is admitted and counted like any call; an empty Destination means
	// Route.Name, a nil Budget the route's retry budget, and a nil Cost
	// the route's Capabilities.EstimateCost (with Fallback.Estimator). Nil
	// means no hedging to the route; see Config.Hedge for hedging to the
	// next route.
	Hedge *hedge.Config
	// Concurrency, when non-nil, makes the per-model limiter's in-flight
	// cap adaptive (package adaptive), beside any Limits.MaxInFlight; with
	// zero Limits the limiter caps the calls in flight only. Nil means none.
	Concurrency *adaptive.Config
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
}

// Config configures a stack. Routes is required; every other zero field means
// "no such layer" or the layer's defaults, as each field says.
type Config struct {
	// Routes are the destinations, in order of preference. With one route the
	// stack calls it directly, after the group's filter (a request its
	// Capabilities do not fit is refused with the error the group returns,
	// and not sent), setting Response.Route, and Response.Cost to
	// the route's Capabilities.Cost of the usage when no layer priced it, as
	// the group does; with more, or one whose Capabilities.Continuation is
	// set (it continues its own broken streams), a fallback.Group moves
	// between them.
	Routes []Route
	// ClientLimits are the per-client limits (keyed by Identity.ClientKey, across
	// models). The zero Limits means no per-client limiter.
	ClientLimits ratelimit.Limits
	// ClientTier and ClientTiers give clients of a tier (a tenant's plan)
	// their own limits, ClientTiers[ClientTier(req)], ClientLimits staying
	// the default: ratelimit.Config.Tier and Tiers of the client limiter,
	// whose rules apply (the tier is read when a client's entry is made).
	// Tiers need ClientLimits: without them New fails.
	ClientTier  func(*portico.Request) string
	ClientTiers map[string]ratelimit.Limits
	// ClientMode says whether a client over its limit waits (ratelimit.Wait, up
	// to ClientMaxWait and the deadline) or is refused at once
	// (ratelimit.Reject, the zero value). The wait counts against Deadline,
	// and a wait that cannot end before the deadline is refused at once
	// (RateLimited, with RetryAfter).
	ClientMode ratelimit.Mode
	// ClientMaxWait bounds a client's wait in Wait mode. Zero means
	// ratelimit's default (30 s).
	ClientMaxWait time.Duration
	// ClientShared keeps the client buckets in a store shared by every
	// instance of the service, so a tenant's limit holds across them; the
	// zero value keeps them in this process. See [ratelimit.Shared].
	ClientShared ratelimit.Shared
	// DefaultMaxTokens is N_max for the client limiter, as in Route. Zero means
	// 1024, or half the smallest token bucket's capacity (of ClientLimits and
	// ClientTiers) when that is smaller.
	DefaultMaxTokens int
	// Deadline is the end-to-end time allowed per request, measured when the
	// request enters the stack (after tracing, before the client limiter, so
	// a wait for admission is part of it). The earliest of it, Request.Contract.Deadline and
	// the context's own deadline applies, so a stalled provider can never hold a
	// call forever. Zero means DefaultDeadline; negative means none besides the
	// contract's and the context's.
	Deadline time.Duration
	// MaxRequestBytes is the largest request the stack takes, in bytes of
	// [portico.Request.Size]: a larger one fails at once, Permanent (Reason
	// "request size"), before any limiter or route; a route whose
	// Capabilities.MaxRequestBytes is smaller refuses it as Incompatible
	// and the group tries another. Zero means DefaultMaxRequestBytes
	// (64 MiB, the adapters' own limit on an answer); negative means none.
	MaxRequestBytes int
	// Fallback configures the group used with several routes; its Routes field
	// is ignored (the stack fills it).
	Fallback fallback.Config
	// Hedge, when non-nil, hedges a request that has not answered after its
	// delay to the next route of the group (fallback.Config.Hedge, unless
	// Fallback.Hedge is set), each hedge charged to the retry budget of the
	// route it goes to when Budget is nil; with one route, to that route
	// (with the route's Cost, as Route.Hedge), Fallback.Hedge or not. Nil
	// means no hedging between routes.
	Hedge *hedge.Config
	// Tracer, when non-nil, traces the stack: its Wrap outermost and, for
	// each route, the WrapAttempt of Tracer.ForRoute(the route's Trace)
	// inside the route's retry layer.
	Tracer *trace.Tracer
	// Middleware wraps the whole stack, first outermost, inside the
	// request span and outside the end-to-end deadline: its work shows in
	// the request's trace, and it may answer without spending any of the
	// deadline or limits (a cache), or set what the layers below read (a
	// Contract.Deadline).
	Middleware []portico.Middleware
}

// DefaultMaxRequestBytes is the request size limit of a stack whose
// Config.MaxRequestBytes is zero: 64 MiB, as the provider adapters'
// DefaultMaxResponseBytes for an answer.
const DefaultMaxRequestBytes = 64 << 20

// DefaultDeadline is the end-to-end deadline of a stack whose Config.Deadline
// is zero: generous for a long generation, yet finite.
const DefaultDeadline = 2 * time.Minute

// Stack is a built stack: a [portico.Model], safe for concurrent use, that
// gives access to the layers it built (limiters, breakers, retriers), whose
// methods are safe to call at any time.
type Stack struct {
	model  portico.Model
	client *ratelimit.Limiter
	routes map[string]*built
}

// built is what the stack built for one route; nil for a layer left out.
type built struct {
	limiter     *ratelimit.Limiter
	breaker     *breaker.Breaker
	retrier     *retry.Retrier
	hedger      *hedge.Hedger
	concurrency *adaptive.Limit
	throttle    *throttle.Throttle
	retryDest   string // the retrier's Destination, for its budget
}

// Generate sends req through the stack; see the package documentation for the
// order of layers. Errors are those of the layers, all classified
// (*portico.Error): Rejected for a shed call or open breakers, RateLimited
// with RetryAfter, Deadline when the budget runs out, and so on.
// A nil req is [portico.ErrNilRequest]; a request that
// [portico.Request.Validate] refuses (no messages, a negative
// MaxOutputTokens, a Contract with a negative Deadline or MaxCost) or one
// above Config.MaxRequestBytes fails at once with its Permanent error,
// whatever the number of routes, and no route is called.
func (s *Stack) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if req == nil {
		return nil, portico.ErrNilRequest
	}
	return s.model.Generate(ctx, req)
}

// ClientLimiter returns the per-client limiter (Config.ClientLimits), or nil
// when there is none; its Keys and SetLimit work on the live stack.
func (s *Stack) ClientLimiter() *ratelimit.Limiter { return s.client }

// Limiter returns the per-model limiter of the named route (Route.Limits), or
// nil when it has none or no route has that name.
func (s *Stack) Limiter(route string) *ratelimit.Limiter {
	if b := s.routes[route]; b != nil {
		return b.limiter
	}
	return nil
}

// Breaker returns the breaker of the named route, or nil when the route has
// none (SkipBreaker) or no route has that name.
func (s *Stack) Breaker(route string) *breaker.Breaker {
	if b := s.routes[route]; b != nil {
		return b.breaker
	}
	return nil
}

// Retrier returns the retry layer of the named route, or nil when the route
// has none (SkipRetry) or no route has that name.
func (s *Stack) Retrier(route string) *retry.Retrier {
	if b := s.routes[route]; b != nil {
		return b.retrier
	}
	return nil
}

// Hedger returns the same-route Hedger of the named route (Route.Hedge),
// or nil when it has none or no route has that name.
func (s *Stack) Hedger(route string) *hedge.Hedger {
	if b := s.routes[route]; b != nil {
		return b.hedger
	}
	return nil
}

// Concurrency returns the adaptive in-flight limit of the named route
// (Route.Concurrency), or nil when it has none or no route has that name.
func (s *Stack) Concurrency(route string) *adaptive.Limit {
	if b := s.routes[route]; b != nil {
		return b.concurrency
	}
	return nil
}

// Throttle returns the client-side throttle of the named route
// (Route.Throttle), or nil when it has none or no route has that name.
func (s *Stack) Throttle(route string) *throttle.Throttle {
	if b := s.routes[route]; b != nil {
		return b.throttle
	}
	return nil
}

// budgets charges a hedge to the retry budget of the route it goes to: it
// is the Budget of Config.Hedge's Hedger.
type budgets map[string]*built

// Take takes the token from the retry budget of route dest, when it has a
// retry layer (a route without one has no budget: the hedge is made).
func (b budgets) Take(dest, clientKey string) bool {
	if r := b[dest]; r != nil && r.retrier != nil {
		return r.retrier.Take(r.retryDest, clientKey)
	}
	return true
}

// Refund gives back the token Take took for a hedge to route dest that was
// refused before anything was sent (hedge.Refunder).
func (b budgets) Refund(dest, clientKey string) {
	if r := b[dest]; r != nil && r.retrier != nil {
		r.retrier.Refund(r.retryDest, clientKey)
	}
}

// New builds the stack cfg describes. It fails, with an error starting
// "stack:", when there is no route, a route has no Model (nil or a typed
// nil, [portico.IsNil]) or no Name, two routes share a Name, a route's
// Capabilities are invalid
// ([portico.Capabilities.Validate]), or a layer's own constructor (or, with
// one route, [fallback.Config.Validate]) rejects its Config (that error is
// wrapped).
func New(cfg Config) (*Stack, error) {
	if len(cfg.Routes) == 0 {
		return nil, errors.New("stack: no routes")
	}
	s := &Stack{routes: make(map[string]*built, len(cfg.Routes))}
	routes := make([]portico.Route, 0, len(cfg.Routes))
	for i := range cfg.Routes {
		rc := &cfg.Routes[i]
		if portico.IsNil(rc.Model) || rc.Name == "" {
			return nil, fmt.Errorf("stack: route %d needs a Name and a Model", i)
		}
		if _, dup := s.routes[rc.Name]; dup {
			return nil, fmt.Errorf("stack: two routes named %q", rc.Name)
		}
		if err := rc.Capabilities.Validate(); err != nil {
			return nil, fmt.Errorf("stack: route %q: %w", rc.Name, err)
		}
		r, b, err := buildRoute(rc, cfg.Tracer, estimator(cfg.Fallback.Estimator))
		if err != nil {
			return nil, fmt.Errorf("stack: route %q: %w", rc.Name, err)
		}
		s.routes[rc.Name] = b
		routes = append(routes, r)
	}

	fc := cfg.Fallback
	fc.Routes = routes
	var groupHedge *hedge.Hedger
	if cfg.Hedge != nil && (len(routes) == 1 || cfg.Fallback.Hedge == nil) {
		hc := *cfg.Hedge
		if hc.Budget == nil {
			hc.Budget = budgets(s.routes)
		}
		if len(routes) == 1 {
			if hc.Destination == "" {
				hc.Destination = routes[0].Name
			}
			if hc.Cost == nil {
				hc.Cost = costOf(routes[0].Capabilities, estimator(cfg.Fallback.Estimator))
			}
		}
		var err error
		if groupHedge, err = hedge.New(hc); err != nil {
			return nil, fmt.Errorf("stack: %w", err)
		}
	}
	if len(routes) == 1 && groupHedge != nil {
		// One route: Config.Hedge hedges to it, whether the route is called
		// directly or through a group (that has no next route to hedge to).
		routes[0].Model = groupHedge.Wrap(routes[0].Model)
		groupHedge = nil
	}
	var inner portico.Model
	// One route is called directly, unless it continues broken streams:
	// the group does that, on the same route.
	if len(routes) == 1 && routes[0].Capabilities.Continuation == portico.ContinueNone {
		// No group is built, but its Config is still checked: a value that
		// can only be a mistake is refused whatever the number of routes.
		if err := fc.Validate(); err != nil {
			return nil, fmt.Errorf("stack: %w", err)
		}
		r := routes[0]
		est := estimator(cfg.Fallback.Estimator)
		inner = portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			if err := fits(&r, req, est); err != nil {
				return nil, err
			}
			resp, err := r.Model.Generate(ctx, r.RequestFor(req))
			switch {
			case err != nil:
				return nil, err
			case resp == nil:
				return nil, portico.ErrNilResponse
			}
			// As the fallback group does with several routes, so that one
			// route and two stamp the same answer the same.
			return r.Stamp(resp, nil, 0), nil
		})
	} else {
		if fc.Hedge == nil {
			fc.Hedge = groupHedge
		}
		g, err := fallback.New(fc)
		if err != nil {
			return nil, fmt.Errorf("stack: %w", err)
		}
		inner = g
	}

	var mws []portico.Middleware
	if cfg.Tracer != nil {
		mws = append(mws, cfg.Tracer.Wrap)
	}
	mws = append(mws, cfg.Middleware...)
	d := cfg.Deadline
	switch {
	case d == 0:
		d = DefaultDeadline
	case d < 0:
		d = 0
	}
	// Outside the client limiter: time spent waiting to be admitted counts
	// against the deadline, and the limiter refuses at once a wait that
	// cannot end before it.
	maxBytes := cfg.MaxRequestBytes
	if maxBytes == 0 {
		maxBytes = DefaultMaxRequestBytes
	}
	mws = append(mws, deadline(d, maxBytes))
	if cfg.ClientLimits != (ratelimit.Limits{}) || cfg.ClientTier != nil || len(cfg.ClientTiers) > 0 {
		cs := cfg.ClientShared
		if cs.Store != nil && cs.Name == "" {
			cs.Name = "client" // apart from the routes' buckets on the same store
		}
		l, err := ratelimit.New(ratelimit.Config{
			Limits:           cfg.ClientLimits,
			DefaultMaxTokens: defaultMaxTokens(cfg.DefaultMaxTokens, cfg.ClientLimits, slices.Collect(maps.Values(cfg.ClientTiers))...),
			Key:              ratelimit.ByClient,
			RefusedBy:        portico.ClientLimit,
			Tier:             cfg.ClientTier,
			Tiers:            cfg.ClientTiers,
			Mode:             cfg.ClientMode,
			MaxWait:          cfg.ClientMaxWait,
			Shared:           cs,
		})
		if err != nil {
			return nil, fmt.Errorf("stack: client limits: %w", err)
		}
		s.client = l
		mws = append(mws, l.Wrap)
	}
	s.model = portico.Chain(inner, mws...)
	return s, nil
}

// fits is the group's filter for a stack of one route r: the error the
// group would return for a request r's Capabilities cannot serve
// ([portico.Capabilities.Fits] with est's input estimate, made only when
// the window or a MaxCost needs it), or nil. One rule for one route and
// many: Incompatible, NotSent, wrapping a [fallback.Exhausted] whose one
// hop names the unmet need.
func fits(r *portico.Route, req *portico.Request, est portico.Estimator) error {
	in := 0
	if r.Capabilities.ContextWindow > 0 || (req.Contract != nil && req.Contract.MaxCost > 0) {
		in = est.EstimateInputTokens(req)
	}
	err := r.Capabilities.Fits(req, in)
	if err == nil {
		return nil
	}
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class == portico.Permanent {
		return err // wrong on any route: the deadline layer found it first
	}
	return &portico.Error{Class: portico.Incompatible, NotSent: true,
		Err: &fallback.Exhausted{Hops: []portico.Hop{{Route: r.Name, Reason: pe.Reason}}}}
}

// estimator is the group's Estimator, e, or its default.
func estimator(e portico.Estimator) portico.Estimator {
	if e == nil {
		return portico.DefaultEstimator
	}
	return e
}

// costOf is a same-route Hedger's Config.Cost for a route of Capabilities
// caps: its estimate of a request's cost, as the group's (fallback's
// Capabilities.Fits), with est's input tokens.
func costOf(caps portico.Capabilities, est portico.Estimator) func(*portico.Request) float64 {
	return func(req *portico.Request) float64 { return caps.EstimateCost(req, est.EstimateInputTokens(req)) }
}

// buildRoute wraps rc.Model in the route's layers and returns the route as the
// stack's fallback group sees it, with its breaker as Health, and what it built;
// est is the group's Estimator.
func buildRoute(rc *Route, tr *trace.Tracer, est portico.Estimator) (portico.Route, *built, error) {
	b := &built{}
	mws := append([]portico.Middleware(nil), rc.Middleware...)
	var ns *notServed
	if rc.ModelName == "" {
		// Before anything is spent on the call: a model the route
		// answered 404 for is refused without one (see notServed).
		ns = new(notServed)
		mws = append(mws, ns.skip)
	}
	var hedgeAt int // where the same-route Hedger goes, once the retrier is built
	if rc.Hedge != nil {
		hedgeAt = len(mws)
		mws = append(mws, nil)
	}
	if rc.Concurrency != nil {
		var err error
		if b.concurrency, err = adaptive.New(*rc.Concurrency); err != nil {
			return portico.Route{}, nil, err
		}
	}
	if rc.Limits != (ratelimit.Limits{}) || b.concurrency != nil || rc.Queue != (ratelimit.Queue{}) {
		lc := ratelimit.Config{
			Limits:           rc.Limits,
			DefaultMaxTokens: defaultMaxTokens(rc.DefaultMaxTokens, rc.Limits),
			Key:              ratelimit.ByModel,
			RefusedBy:        portico.RouteLimit,
			Queue:            rc.Queue,
			Shared:           rc.LimitsShared,
		}
		if lc.Shared.Store != nil && lc.Shared.Name == "" {
			lc.Shared.Name = "route " + rc.Name // each route's buckets its own, as in the process
		}
		if b.concurrency != nil {
			lc.Concurrency = b.concurrency
		}
		l, err := ratelimit.New(lc)
		if err != nil {
			return portico.Route{}, nil, err
		}
		b.limiter = l
		mws = append(mws, l.Wrap)
	}
	if !rc.SkipBreaker {
		bc := rc.Breaker
		if bc.Name == "" {
			bc.Name = rc.Name
		}
		var err error
		if b.breaker, err = breaker.New(bc); err != nil {
			return portico.Route{}, nil, err
		}
		mws = append(mws, b.breaker.Wrap)
	}
	if !rc.SkipRetry {
		rcfg := rc.Retry
		if rcfg.Destination == "" {
			rcfg.Destination = rc.Name // budgets and retry events per route, not per model name
		}
		var err error
		if b.retrier, err = retry.New(rcfg); err != nil {
			return portico.Route{}, nil, err
		}
		b.retryDest = rcfg.Destination
		mws = append(mws, b.retrier.Wrap)
	}
	if rc.Hedge != nil {
		hc := *rc.Hedge
		if hc.Destination == "" {
			hc.Destination = rc.Name
		}
		if hc.Budget == nil && b.retrier != nil {
			hc.Budget = budgets{hc.Destination: b}
		}
		if hc.Cost == nil {
			hc.Cost = costOf(rc.Capabilities, est)
		}
		var err error
		if b.hedger, err = hedge.New(hc); err != nil {
			return portico.Route{}, nil, err
		}
		mws[hedgeAt] = b.hedger.Wrap
	}
	if tr != nil {
		mws = append(mws, tr.ForRoute(routeTrace(rc)).WrapAttempt)
	}
	if !rc.SkipValidate {
		v, err := validate.New(rc.Validate)
		if err != nil {
			return portico.Route{}, nil, err
		}
		mws = append(mws, v.Wrap)
	}
	if rc.Throttle != nil {
		var err error
		if b.throttle, err = throttle.New(*rc.Throttle); err != nil {
			return portico.Route{}, nil, err
		}
		mws = append(mws, b.throttle.Wrap)
	}
	if ns != nil {
		// Innermost but for ModelMiddleware: every layer that judges the
		// route (throttle, retry, breaker) sees the 404 as the request's.
		mws = append(mws, ns.learn)
	}
	mws = append(mws, rc.ModelMiddleware...)
	r := rc.Route
	r.Model = portico.Chain(rc.Model, mws...)
	r.Health = nil
	if b.breaker != nil {
		r.Health = b.breaker
	}
	return r, b, nil
}

// routeTrace is rc.Trace with its empty fields set from the route.
func routeTrace(rc *Route) trace.Route {
	t := rc.Trace
	if t.Name == "" {
		t.Name = rc.Name
	}
	if t.Provider == "" {
		t.Provider = rc.Capabilities.Provider
	}
	if t.Model == "" {
		t.Model = rc.ModelName
	}
	if t.Pricing == nil {
		caps := rc.Capabilities
		t.Pricing = &caps
	}
	return t
}

// defaultMaxTokens is v, or when v is zero 1024 capped at half the
// smallest token bucket's capacity (TokenBurst, else Tokens) of l and
// tiers, so that a small token limit leaves room for the input and does
// not make the default itself an error.
func defaultMaxTokens(v int, l ratelimit.Limits, tiers ...ratelimit.Limits) int {
	if v != 0 {
		return v
	}
	d := 1024
	for _, l := range append(tiers, l) {
		c := l.TokenBurst
		if c == 0 {
			c = l.Tokens
		}
		if c > 0 && c/2 < d {
			d = max(c/2, 1)
		}
	}
	return d
}

// deadline returns the end-to-end deadline layer: it refuses a request that
// [portico.Request.Validate] refuses or one larger than maxBytes (> 0,
// [portico.Request.Size]), then bounds ctx by d and by the
// request's Contract.Deadline (the earliest applies, as does ctx's own). With
// neither set it passes the call through untouched.
func deadline(d time.Duration, maxBytes int) portico.Middleware {
	return func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			if err := req.Validate(); err != nil {
				return nil, err // wrong on any route: none is called
			}
			if maxBytes > 0 {
				if n := req.Size(); n > maxBytes {
					return nil, &portico.Error{Class: portico.Permanent, Model: req.Model, Reason: "request size", NotSent: true,
						Err: errors.New(strconv.Itoa(n) + " bytes, above the stack's " + strconv.Itoa(maxBytes))}
				}
			}
			limit := d
			if k := req.Contract; k != nil && k.Deadline > 0 && (limit == 0 || k.Deadline < limit) {
				limit = k.Deadline
			}
			if limit <= 0 {
				return next.Generate(ctx, req)
			}
			// One reading of the clock; no context is derived when the
			// caller's deadline is the earlier.
			at := time.Now().Add(limit)
			if dl, ok := ctx.Deadline(); ok && !dl.After(at) {
				return next.Generate(ctx, req)
			}
			ctx, cancel := context.WithDeadline(ctx, at)
			defer cancel()
			return next.Generate(ctx, req)
		})
	}
}
