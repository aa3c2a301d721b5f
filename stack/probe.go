package stack

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/internal/rules"
)

// DefaultProbeInterval is the Interval of a [Probe] whose Interval is zero.
const DefaultProbeInterval = 30 * time.Second

// Probe configures the stack's prober (Config.Probe): one goroutine per
// [Stack] that, every Interval, sends Request to each route that saw no
// call during the last Interval or whose breaker is not closed, so that a
// fallback whose key was revoked is found before the outage that needs it,
// and a route that healed is closed again without a user's request.
//
// A probe is a call like any other: it goes through the route's layers
// (limiter, breaker, retry, validate), so its outcome is classified by
// [portico.FaultOf] and counted by the route's breaker (a 401 or 403,
// Unusable, opens it at once; an open breaker's probe slot is the
// prober's once its open interval ends), and a RateLimited answer with a
// RetryAfter cools the route down in the group's Cooldowns
// (Config.Fallback.Cooldowns, shared across instances with package
// redisstore's). A route whose breaker or cooldown says it takes no call
// yet is not probed. Probes are no user's traffic: they do not make a
// route look busy.
type Probe struct {
	// Interval is how often the prober looks at the routes; each route is
	// probed once per Interval at most. Zero means DefaultProbeInterval;
	// negative is an error.
	Interval time.Duration
	// Request is the probe, the caller's own (keep it tiny: its prompt is
	// sent to every probed route). Its MaxOutputTokens is set to 1 on a
	// copy. Required.
	Request *portico.Request
	// MaxPerInterval caps the probes sent per Interval over all routes,
	// taking the routes in turn from where the last interval stopped, so
	// that none is starved. Zero means one per route; negative is an
	// error.
	MaxPerInterval int
	// Timeout bounds each probe. Zero means Interval.
	Timeout time.Duration
	// OnProbe, when non-nil, is called after each probe with the route's
	// name and its error (nil when it answered), on the prober's
	// goroutine; it must not block. The error is classified
	// (*portico.Error) and carries nothing of the request.
	OnProbe func(route string, err error)
}

// prober is the goroutine Config.Probe starts, and what it probes.
type prober struct {
	cfg    Probe
	req    portico.Request
	routes []probed
	cd     portico.Cooldowns
	next   int // the route the next interval starts with
	stop   context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// probed is one route as the prober sees it.
type probed struct {
	route   portico.Route // its Model: the route's layers, unseen
	breaker *breaker.Breaker
	last    *atomic.Int64 // when a user's call last entered, unix ns
}

// check returns why p cannot be used, or nil.
func (p *Probe) check() error {
	if err := rules.First(
		rules.If(p.Request == nil, "stack: Config.Probe.Request is nil"),
		rules.If(p.Interval < 0 || p.MaxPerInterval < 0 || p.Timeout < 0,
			"stack: Config.Probe: Interval, MaxPerInterval and Timeout must not be negative"),
	); err != nil {
		return err
	}
	if err := p.Request.Validate(); err != nil {
		return fmt.Errorf("stack: Config.Probe.Request: %w", err)
	}
	return nil
}

// watch wraps each route of routes so that a user's call marks it busy,
// and returns the prober over them (not started).
func (s *Stack) watch(cfg Probe, routes []portico.Route, cd portico.Cooldowns) *prober {
	cfg.Interval = cmp.Or(cfg.Interval, DefaultProbeInterval)
	cfg.Timeout = cmp.Or(cfg.Timeout, cfg.Interval)
	cfg.MaxPerInterval = cmp.Or(cfg.MaxPerInterval, len(routes))
	p := &prober{cfg: cfg, req: *cfg.Request, cd: cd, done: make(chan struct{})}
	p.req.MaxOutputTokens = 1
	for i := range routes {
		last := kept(s.memo, "route "+routes[i].Name+" probed", func() *atomic.Int64 { return new(atomic.Int64) }) // unix ns, of a user's call
		p.routes = append(p.routes, probed{route: routes[i], breaker: s.routes[routes[i].Name].breaker, last: last})
		next := routes[i].Model
		routes[i].Model = portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			last.Store(time.Now().UnixNano())
			return next.Generate(ctx, req)
		})
	}
	return p
}

// start runs the prober until close; a nil prober (no Config.Probe) does
// nothing.
func (p *prober) start() {
	if p == nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	go p.run(ctx)
}

// close stops the prober and waits for its goroutine to end; a nil
// prober, or one never started (built by an Update after Close), has none.
func (p *prober) close() {
	if p == nil || p.stop == nil {
		return
	}
	p.once.Do(func() {
		p.stop()
		<-p.done
	})
}

func (p *prober) run(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.round(ctx)
		}
	}
}

// round probes the routes due, MaxPerInterval at most, one at a time.
func (p *prober) round(ctx context.Context) {
	n, start, sent := len(p.routes), p.next, 0
	for i := 0; i < n && sent < p.cfg.MaxPerInterval && ctx.Err() == nil; i++ {
		r := &p.routes[(start+i)%n]
		if !p.due(r) {
			continue
		}
		sent++
		p.next = (start + i + 1) % n
		p.probe(ctx, r)
	}
}

// due reports whether r should be probed now: idle for an Interval or
// its breaker not closed, and taking calls (breaker and cooldown).
func (p *prober) due(r *probed) bool {
	now := time.Now()
	idle := now.Sub(time.Unix(0, r.last.Load())) >= p.cfg.Interval
	if r.breaker != nil {
		if !r.breaker.Available() {
			return false
		}
		idle = idle || r.breaker.State() != breaker.Closed
	}
	return idle && !p.cd.Until(key(r.route)).After(now)
}

// key is the route's key in Cooldowns, as package fallback keys it.
func key(r portico.Route) string { return cmp.Or(r.Capabilities.Quota, r.Name) }

// probe sends the probe to r and records what a cooldown needs.
func (p *prober) probe(ctx context.Context, r *probed) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	req := p.req
	_, err := r.route.Model.Generate(ctx, &req)
	cancel()
	if portico.ClassOf(err) == portico.RateLimited {
		if ra := portico.RetryAfterOf(err); ra > 0 {
			p.cd.Set(key(r.route), time.Now().Add(ra))
		}
	}
	if p.cfg.OnProbe != nil {
		p.cfg.OnProbe(r.route.Name, err)
	}
}

// Close stops the stack's prober (Config.Probe), waiting for a probe under
// way to end, and no later [Stack.Update] starts one; later calls, and
// calls on a stack without one, do nothing. It always returns nil. The
// stack still answers calls after Close.
func (s *Stack) Close() error {
	if s.ctl == nil {
		return nil
	}
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	s.ctl.closed = true
	s.cur.Load().prober.close()
	return nil
}
