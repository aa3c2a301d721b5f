package stack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
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
}

// Config configures a stack. Routes is required; every other zero field means
// "no such layer" or the layer's defaults, as each field says.
type Config struct {
	// Routes are the destinations, in order of preference. With one route the
	// stack calls it directly (setting Response.Route, and Response.Cost to
	// the route's Capabilities.Cost of the usage when no layer priced it, as
	// the group does); with more, a fallback.Group moves between them.
	Routes []Route
	// ClientLimits are the per-client limits (keyed by Identity.ClientKey, across
	// models). The zero Limits means no per-client limiter.
	ClientLimits ratelimit.Limits
	// ClientMode says whether a client over its limit waits (ratelimit.Wait, up
	// to ClientMaxWait and the deadline) or is refused at once
	// (ratelimit.Reject, the zero value). The wait counts against Deadline,
	// and a wait that cannot end before the deadline is refused at once
	// (RateLimited, with RetryAfter).
	ClientMode ratelimit.Mode
	// ClientMaxWait bounds a client's wait in Wait mode. Zero means
	// ratelimit's default (30 s).
	ClientMaxWait time.Duration
	// DefaultMaxTokens is N_max for the client limiter, as in Route. Zero means
	// 1024, or half the token bucket's capacity when that is smaller.
	DefaultMaxTokens int
	// Deadline is the end-to-end time allowed per request, measured when the
	// request enters the stack (after tracing, before the client limiter, so
	// a wait for admission is part of it). The earliest of it, Request.Contract.Deadline and
	// the context's own deadline applies, so a stalled provider can never hold a
	// call forever. Zero means DefaultDeadline; negative means none besides the
	// contract's and the context's.
	Deadline time.Duration
	// Fallback configures the group used with several routes; its Routes field
	// is ignored (the stack fills it).
	Fallback fallback.Config
	// Tracer, when non-nil, traces the stack: its Wrap outermost and its
	// WrapAttempt inside each route's retry layer.
	Tracer *trace.Tracer
}

// DefaultDeadline is the end-to-end deadline of a stack whose Config.Deadline
// is zero: generous for a long generation, yet finite.
const DefaultDeadline = 2 * time.Minute

// Stack is a built stack: a [portico.Model], safe for concurrent use, whose
// routes' breakers can be inspected.
type Stack struct {
	model    portico.Model
	breakers map[string]*breaker.Breaker
}

// Generate sends req through the stack; see the package documentation for the
// order of layers. Errors are those of the layers, all classified
// (*portico.Error): Rejected for a shed call or open breakers, RateLimited
// with RetryAfter, Deadline when the budget runs out, and so on.
// A nil req is [portico.ErrNilRequest].
func (s *Stack) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if req == nil {
		return nil, portico.ErrNilRequest
	}
	return s.model.Generate(ctx, req)
}

// Breaker returns the breaker of the named route, or nil when the route has
// none (SkipBreaker) or no route has that name. Its State and Available are safe
// to call at any time.
func (s *Stack) Breaker(route string) *breaker.Breaker { return s.breakers[route] }

// New builds the stack cfg describes. It fails, with an error starting
// "stack:", when there is no route, a route has no Model or no Name, two
// routes share a Name, or a layer's own constructor rejects its Config (that
// error is wrapped).
func New(cfg Config) (*Stack, error) {
	if len(cfg.Routes) == 0 {
		return nil, errors.New("stack: no routes")
	}
	s := &Stack{breakers: make(map[string]*breaker.Breaker, len(cfg.Routes))}
	routes := make([]portico.Route, 0, len(cfg.Routes))
	for i := range cfg.Routes {
		rc := &cfg.Routes[i]
		if rc.Model == nil || rc.Name == "" {
			return nil, fmt.Errorf("stack: route %d needs a Name and a Model", i)
		}
		if _, dup := s.breakers[rc.Name]; dup {
			return nil, fmt.Errorf("stack: two routes named %q", rc.Name)
		}
		r, brk, err := buildRoute(rc, cfg.Tracer)
		if err != nil {
			return nil, fmt.Errorf("stack: route %q: %w", rc.Name, err)
		}
		s.breakers[rc.Name] = brk
		routes = append(routes, r)
	}

	var inner portico.Model
	if len(routes) == 1 {
		r := routes[0]
		inner = portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			resp, err := r.Model.Generate(ctx, r.RequestFor(req))
			if err == nil {
				// As the fallback group does with several routes, so that
				// one route and two price the same answer the same.
				if resp.Route == "" {
					resp.Route = r.Name
				}
				if resp.Cost == 0 {
					resp.Cost = r.Capabilities.Cost(resp.Usage)
				}
			}
			return resp, err
		})
	} else {
		fc := cfg.Fallback
		fc.Routes = routes
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
	mws = append(mws, deadline(d))
	if cfg.ClientLimits != (ratelimit.Limits{}) {
		l, err := ratelimit.New(ratelimit.Config{
			Limits:           cfg.ClientLimits,
			DefaultMaxTokens: defaultMaxTokens(cfg.DefaultMaxTokens, cfg.ClientLimits),
			Key:              ratelimit.ByClient,
			Mode:             cfg.ClientMode,
			MaxWait:          cfg.ClientMaxWait,
		})
		if err != nil {
			return nil, fmt.Errorf("stack: client limits: %w", err)
		}
		mws = append(mws, l.Wrap)
	}
	s.model = portico.Chain(inner, mws...)
	return s, nil
}

// buildRoute wraps rc.Model in the route's layers and returns the route as the
// stack's fallback group sees it, with its breaker as Health.
func buildRoute(rc *Route, tr *trace.Tracer) (portico.Route, *breaker.Breaker, error) {
	var mws []portico.Middleware
	if rc.Limits != (ratelimit.Limits{}) {
		l, err := ratelimit.New(ratelimit.Config{
			Limits:           rc.Limits,
			DefaultMaxTokens: defaultMaxTokens(rc.DefaultMaxTokens, rc.Limits),
			Key:              ratelimit.ByModel,
		})
		if err != nil {
			return portico.Route{}, nil, err
		}
		mws = append(mws, l.Wrap)
	}
	var brk *breaker.Breaker
	if !rc.SkipBreaker {
		bc := rc.Breaker
		if bc.Name == "" {
			bc.Name = rc.Name
		}
		var err error
		if brk, err = breaker.New(bc); err != nil {
			return portico.Route{}, nil, err
		}
		mws = append(mws, brk.Wrap)
	}
	if !rc.SkipRetry {
		rcfg := rc.Retry
		if rcfg.Destination == "" {
			rcfg.Destination = rc.Name // budgets and retry events per route, not per model name
		}
		r, err := retry.New(rcfg)
		if err != nil {
			return portico.Route{}, nil, err
		}
		mws = append(mws, r.Wrap)
	}
	if tr != nil {
		mws = append(mws, tr.WrapAttempt)
	}
	if !rc.SkipValidate {
		v, err := validate.New(rc.Validate)
		if err != nil {
			return portico.Route{}, nil, err
		}
		mws = append(mws, v.Wrap)
	}
	r := rc.Route
	r.Model = portico.Chain(rc.Model, mws...)
	r.Health = nil
	if brk != nil {
		r.Health = brk
	}
	return r, brk, nil
}

// defaultMaxTokens is v, or when v is zero 1024 capped at half the token
// bucket's capacity (TokenBurst, else Tokens), so that a small token limit
// leaves room for the input and does not make the default itself an error.
func defaultMaxTokens(v int, l ratelimit.Limits) int {
	if v != 0 {
		return v
	}
	c := l.TokenBurst
	if c == 0 {
		c = l.Tokens
	}
	if c > 0 && c/2 < 1024 {
		return max(c/2, 1)
	}
	return 1024
}

// deadline returns the end-to-end deadline layer: it bounds ctx by d and by the
// request's Contract.Deadline (the earliest applies, as does ctx's own). With
// neither set it passes the call through untouched.
func deadline(d time.Duration) portico.Middleware {
	return func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			limit := d
			if k := req.Contract; k != nil && k.Deadline > 0 && (limit == 0 || k.Deadline < limit) {
				limit = k.Deadline
			}
			if limit == 0 {
				return next.Generate(ctx, req)
			}
			ctx, cancel := context.WithTimeout(ctx, limit)
			defer cancel()
			return next.Generate(ctx, req)
		})
	}
}
