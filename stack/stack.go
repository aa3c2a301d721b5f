package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/guard"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/inflight"
	"github.com/portico-llm/portico/internal/rules"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/respcache"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/spend"
	"github.com/portico-llm/portico/throttle"
	"github.com/portico-llm/portico/trace"
)

// Config configures a stack. Routes is required; every other zero field means
// "no such layer" or the layer's defaults, as each field says. Each layer
// takes its own package's Config: the stack fills only the fields that
// place the layer in the stack (a limiter's Key, a breaker's Name), and only
// when they are left zero.
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
	// Client, when non-nil, configures the per-client limiter, outside the
	// group and inside the deadline, so that a wait for admission
	// (ratelimit.Wait) counts against it. Its zero fields that place it
	// are filled: Key means ratelimit.ByClient, RefusedBy
	// portico.ClientLimit, and with a Shared.Store an empty Shared.Name
	// means "client" (apart from the routes' buckets on the same store).
	// Nil means no per-client limiter.
	Client *ratelimit.Config
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
	// is ignored (the stack fills it), and its Hedge must be nil (set
	// Config.Hedge): New fails otherwise. Its Estimator is the stack's,
	// given to every layer whose own is nil (limiters, spend); nil means a
	// [portico.Calibrated] [portico.CharEstimator] per stack, which the
	// limiters teach from the input tokens answers report, one sample a
	// call: the routes' limiters, or the client limiter when no route has
	// one (it is then given [portico.EstimateOnly] of it).
	Fallback fallback.Config
	// Hedge, when non-nil, is the group's hedging, configured here only: a
	// request that has not answered after the delay is hedged to the next
	// route of the group, each hedge charged to the retry budget of the
	// route it goes to when Budget is nil; with one route, to that route
	// (with the route's Cost, as Route.Hedge). Nil means no hedging
	// between routes.
	Hedge *hedge.Config
	// Tracer, when non-nil, traces the stack: its Wrap outermost and, for
	// each route, the WrapAttempt of Tracer.ForRoute(the route's Trace)
	// inside the route's retry layer.
	Tracer *trace.Tracer
	// Kind is how the group of every route chooses among them (a weighted
	// split, a threshold router, a cascade, a balancer: see [Kind]); nil
	// means the fallback group in the routes' order. With Groups, each
	// Group has its own Kind and this one must be nil.
	Kind Kind
	// Groups, when non-empty, are model groups: a request whose Model
	// names a group (or an alias of one) is sent to its routes only,
	// with its Model cleared; any other request goes to the first group,
	// its Model unchanged. Every route belongs to one group at least.
	// Nil means one group of every route (Kind).
	Groups []Group
	// Aliases maps a Request.Model to the name of a group, or to another
	// model name that the request is then sent to the default group
	// with. Nil means none.
	Aliases map[string]string
	// Middleware wraps the whole stack, first outermost, inside the
	// request span and outside the end-to-end deadline: its work shows in
	// the request's trace, and it may answer without spending any of the
	// deadline or limits (a cache), or set what the layers below read (a
	// Contract.Deadline).
	Middleware []portico.Middleware
	// Cache, when non-nil, is a response cache (package respcache), the
	// first layer inside the request span: a hit spends no deadline,
	// limit, budget or route call, and only answers the layers below
	// accepted are cached. Nil means none.
	Cache *respcache.Config
	// Spend, when non-nil, keeps spend budgets (package spend) below the
	// client limiter and above the routes. Its empty Routes are filled
	// with the routes' Capabilities, a nil Estimator with the group's, and
	// with a Shared.Store an empty Shared.Name with "spend". Nil means
	// none.
	Spend *spend.Config
	// Guard, when non-nil, runs input guardrails (package guard) before
	// anything is spent on a request: inside the request span, before the
	// cache, the deadline, every limiter, budget and route. A refused
	// request is the request's fault (Permanent), counted against no
	// route. Nil means none.
	Guard *guard.Config
	// InFlight, when non-nil, caps each tenant's calls in flight across
	// every instance sharing its store (package inflight), below the
	// client limiter and above the spend budgets; with a Shared.Store an
	// empty Shared.Name means "inflight". Nil means none.
	InFlight *inflight.Config
	// Probe, when non-nil, starts a prober (see [Probe]) that probes idle
	// routes and routes whose breaker is open; stop it with Stack.Close.
	// Nil means none.
	Probe *Probe
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
// methods are safe to call at any time, and whose configuration
// [Stack.Update] changes at run time (the accessors then return the
// layers of the configuration in force).
type Stack struct {
	// cur is the configuration in force, itself a Stack whose fields below
	// are what New or Update built; ctl serializes Update and Close. Both
	// are set on the Stack New returns only (live.go), which reads the
	// others through now.
	cur      atomic.Pointer[Stack]
	ctl      *control
	memo     *memo // what this configuration built, for the next (live.go)
	model    portico.Model
	client   *ratelimit.Limiter
	routes   map[string]*built
	cache    *respcache.Cache
	spend    *spend.Budgets
	guard    *guard.Guards
	inflight *inflight.Caps
	prober   *prober
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
	return s.cur.Load().model.Generate(ctx, req)
}

// ClientLimiter returns the per-client limiter (Config.Client), or nil
// when there is none; its Keys and SetLimit work on the live stack.
func (s *Stack) ClientLimiter() *ratelimit.Limiter { return s.now().client }

// Limiter returns the per-model limiter of the named route (Route.Limiter),
// or nil when it has none or no route has that name.
func (s *Stack) Limiter(route string) *ratelimit.Limiter { return s.route(route).limiter }

// Breaker returns the breaker of the named route, or nil when the route has
// none (SkipBreaker) or no route has that name.
func (s *Stack) Breaker(route string) *breaker.Breaker { return s.route(route).breaker }

// Retrier returns the retry layer of the named route, or nil when the route
// has none (SkipRetry) or no route has that name.
func (s *Stack) Retrier(route string) *retry.Retrier { return s.route(route).retrier }

// Hedger returns the same-route Hedger of the named route (Route.Hedge),
// or nil when it has none or no route has that name.
func (s *Stack) Hedger(route string) *hedge.Hedger { return s.route(route).hedger }

// Throttle returns the client-side throttle of the named route
// (Route.Throttle), or nil when it has none or no route has that name.
func (s *Stack) Throttle(route string) *throttle.Throttle { return s.route(route).throttle }

// route returns what the stack built for the named route, or an empty
// built when no route has that name.
func (s *Stack) route(name string) *built {
	if b := s.now().routes[name]; b != nil {
		return b
	}
	return &built{}
}

// New builds the stack cfg describes. It fails, with an error starting
// "stack:", when there is no route, a route has no Model (nil or a typed
// nil, [portico.IsNil]) or no Name, two routes share a Name, a route's
// Capabilities are invalid ([portico.Capabilities.Validate]), a route's
// Order leaves out or repeats a layer, Config.Fallback.Hedge is set,
// Config.Probe has no Request or a negative field, or a layer's own constructor (or, with one
// route, [fallback.Config.Validate]) rejects its Config (that error is
// wrapped).
func New(cfg Config) (*Stack, error) {
	g, err := build(cfg, nil)
	if err != nil {
		return nil, err
	}
	s := &Stack{ctl: new(control)}
	s.cur.Store(g)
	g.prober.start()
	return s, nil
}

// build builds the configuration cfg describes, keeping the layers of
// prev (nil: none) whose Config is the same (see [Stack.Update]).
func build(cfg Config, prev *Stack) (*Stack, error) {
	s := &Stack{routes: make(map[string]*built, len(cfg.Routes)), memo: newMemo(prev)}
	defer func() { s.memo.prev = nil }() // the configuration before is not kept alive
	if cfg.Fallback.Cooldowns == nil {
		cfg.Fallback.Cooldowns = defaultCooldowns(s.memo)
	}
	est := estimator(cfg.Fallback.Estimator, s.memo)
	routes, err := s.buildRoutes(cfg.Routes, cfg.Tracer, est)
	if err != nil {
		return nil, err
	}
	if err := s.buildProber(&cfg, routes); err != nil {
		return nil, err
	}
	if cfg.Fallback.Hedge != nil {
		return nil, errors.New("stack: Config.Fallback.Hedge is set: configure the group's hedging in Config.Hedge")
	}
	inner, err := s.groups(cfg, routes, est)
	if err != nil {
		return nil, err
	}
	if err := s.buildOuter(cfg, est); err != nil {
		return nil, err
	}
	s.model = portico.Chain(inner, s.middlewares(cfg, routes, inner)...)
	return s, nil
}

// buildProber checks cfg.Probe and, when set, builds the prober over
// routes; the group and the prober then share cfg.Fallback.Cooldowns.
func (s *Stack) buildProber(cfg *Config, routes []portico.Route) error {
	if cfg.Probe == nil {
		return nil
	}
	if err := cfg.Probe.check(); err != nil {
		return err
	}
	s.prober = s.watch(*cfg.Probe, routes, cfg.Fallback.Cooldowns)
	return nil
}

// buildOuter builds the layers above the group that cfg sets, each from
// its Config with the zero fields that place it filled: the client
// limiter, the cache, the spend budgets, the guard and the in-flight cap;
// the first error is New's.
func (s *Stack) buildOuter(cfg Config, est portico.Estimator) error {
	m, cest := s.memo, clientEstimator(cfg.Routes, est)
	var errs [5]error
	s.client, errs[0] = optional(m, "Client", cfg.Client, func(c *ratelimit.Config) {
		*c = placeLimiter(*c, ratelimit.ByClient, portico.ClientLimit, "client", cest)
	}, ratelimit.New)
	s.cache, errs[1] = optional(m, "Cache", cfg.Cache, asIs, respcache.New)
	s.spend, errs[2] = optional(m, "Spend", cfg.Spend, func(c *spend.Config) { placeSpend(c, cfg.Routes, est) }, spend.New)
	s.guard, errs[3] = optional(m, "Guard", cfg.Guard, asIs, guard.New)
	s.inflight, errs[4] = optional(m, "InFlight", cfg.InFlight, func(c *inflight.Config) { named(&c.Shared, "inflight") }, inflight.New)
	return cmp.Or(errs[:]...)
}

// optional builds the layer that Config's field configures with c (nil:
// none): newLayer over a copy of *c that place fills, or the layer the
// configuration before built from the same copy (remember). Its error
// names the field.
func optional[C, L any](m *memo, field string, c *C, place func(*C), newLayer func(C) (*L, error)) (*L, error) {
	if c == nil {
		return nil, nil
	}
	v := *c
	place(&v)
	l, err := remember(m, field, v, newLayer)
	if err != nil {
		return nil, fmt.Errorf("stack: Config.%s: %w", field, err)
	}
	return l, nil
}

// asIs places a layer whose Config the stack leaves as it is.
func asIs[C any](*C) {}

// named gives sh, a layer's share of a store, the Name that keeps it
// apart from the other layers' when it has a Store and no Name.
func named[S comparable](sh *portico.Shared[S], name string) {
	var none S
	if sh.Store != none && sh.Name == "" {
		sh.Name = name
	}
}

// middlewares returns the layers above inner, the group, outermost first
// (nil for a layer cfg leaves out): the tracer, the guard (a refused
// request spends nothing), the cache (a hit spends nothing),
// Config.Middleware, the deadline, the admission, the client limiter, the
// in-flight cap and the spend budgets.
func (s *Stack) middlewares(cfg Config, routes []portico.Route, inner portico.Model) []portico.Middleware {
	// Inside the deadline, outside the client limiter: the layers' store
	// calls before the send, asked in one (admission.go), where the first
	// route is where a request goes.
	a := newAdmission(s.client, routes[0], s.routes[cfg.Routes[0].Name], firstIsNext(cfg))
	mws := append([]portico.Middleware{wrap(cfg.Tracer), wrap(s.guard), wrap(s.cache)}, cfg.Middleware...)
	// Outside the client limiter: time spent waiting to be admitted counts
	// against the deadline, and the limiter refuses at once a wait that
	// cannot end before it.
	return append(mws, deadline(cfg.Deadline, cfg.MaxRequestBytes, a == nil && s.carries(cfg, inner)),
		a, wrap(s.client), wrap(s.inflight), wrap(s.spend))
}

// wrap is l's Wrap, or nil (no layer) when l is nil.
func wrap[L any, P interface {
	*L
	Wrap(portico.Model) portico.Model
}](l P) portico.Middleware {
	if l == nil {
		return nil
	}
	return l.Wrap
}

// carries reports whether the stack's deadline may reach inner, the
// group, as a deadline its context carries (package due) rather than a
// context of its own, so that each candidate's context is the request's
// one: inner enforces it (a fallback group, or the one route called
// directly), and no layer between the deadline and inner blocks without
// reading it (a shared store's round trip, the in-flight cap's wait; the
// admission's is checked by the caller). The client limiter's waits read
// it.
func (s *Stack) carries(cfg Config, inner portico.Model) bool {
	switch inner.(type) {
	case *fallback.Group, *direct:
	default:
		return false
	}
	return s.inflight == nil && (cfg.Client == nil || cfg.Client.Shared.Store == nil) &&
		(cfg.Spend == nil || cfg.Spend.Shared.Store == nil)
}

// buildRoutes checks each route of rcs and builds its layers, in order.
func (s *Stack) buildRoutes(rcs []Route, tr *trace.Tracer, est portico.Estimator) ([]portico.Route, error) {
	if len(rcs) == 0 {
		return nil, errors.New("stack: no routes")
	}
	routes := make([]portico.Route, 0, len(rcs))
	for i := range rcs {
		rc := &rcs[i]
		_, dup := s.routes[rc.Name]
		if err := rules.First(
			rules.If(portico.IsNil(rc.Model) || rc.Name == "", fmt.Sprintf("stack: route %d needs a Name and a Model", i)),
			rules.If(dup, fmt.Sprintf("stack: two routes named %q", rc.Name)),
		); err != nil {
			return nil, err
		}
		if err := rc.Capabilities.Validate(); err != nil {
			return nil, fmt.Errorf("stack: route %q: %w", rc.Name, err)
		}
		r, b, err := buildRoute(rc, tr, est, s.memo)
		if err != nil {
			return nil, fmt.Errorf("stack: route %q: %w", rc.Name, err)
		}
		s.routes[rc.Name] = b
		routes = append(routes, r)
	}
	return routes, nil
}

// group returns what the stack calls below its client limiter: the one
// route of routes directly, or a fallback group over them (several
// routes, or one that continues its broken streams), hedged as
// Config.Hedge says.
func (s *Stack) group(cfg Config, routes []portico.Route, est portico.Estimator) (portico.Model, error) {
	fc := cfg.Fallback
	fc.Routes = routes
	if fc.Headroom == nil {
		fc.Headroom = s.headroom(routes)
	}
	var err error
	if fc.Hedge, err = s.groupHedger(cfg.Hedge, routes, est); err == nil {
		// Checked even when no group is built (one route): a value that
		// can only be a mistake is refused whatever the number of routes.
		err = fc.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	if len(routes) == 1 && routes[0].Capabilities.Continuation == portico.ContinueNone {
		return &direct{r: routes[0], est: est}, nil
	}
	return fallback.New(fc) // validated: no error
}

// groupHedger builds the group's Hedger from hc (nil: none), charging each
// hedge to the retry budget of the route it goes to unless hc has a
// Budget. With one route, which a group has no next route to hedge to,
// it hedges to that route, at its cost, whether it is called directly or
// through a group: it wraps the route's Model and returns nil.
func (s *Stack) groupHedger(hc *hedge.Config, routes []portico.Route, est portico.Estimator) (*hedge.Hedger, error) {
	if hc == nil {
		return nil, nil
	}
	c := *hc
	if c.Budget == nil {
		c.Budget = budgets(s.routes)
	}
	if len(routes) > 1 {
		return hedge.New(c)
	}
	c.Destination = cmp.Or(c.Destination, routes[0].Name)
	if c.Cost == nil {
		c.Cost = costOf(routes[0].Capabilities, est)
	}
	h, err := hedge.New(c)
	if err == nil {
		routes[0].Model = h.Wrap(routes[0].Model)
	}
	return nil, err
}

// placeLimiter is c with the zero fields that place a limiter in the
// stack set: its Key, whose limit it keeps (RefusedBy), the Name of its
// buckets in a shared store, apart from the other limiters', and the
// stack's Estimator est.
func placeLimiter(c ratelimit.Config, key func(*portico.Request) string, by portico.Refuser, name string, est portico.Estimator) ratelimit.Config {
	if c.Key == nil {
		c.Key = key
	}
	c.Estimator = cmp.Or(c.Estimator, est)
	c.RefusedBy = cmp.Or(c.RefusedBy, by)
	named(&c.Shared, name)
	return c
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
