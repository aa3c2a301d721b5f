// Command fleet runs three instances of a service over one Redis: the
// preset stack (package stack) over the OpenAI and Anthropic adapters
// against their fake servers on loopback, every instance with its own
// Redis client, sharing the tenants' limits, the routes' limits, the
// retry budgets, the cooldowns and the breakers' open state. OpenAI goes
// down for a while and comes back. It prints what each instance
// admitted, the Redis round trips per request, and the worst excess of
// each limit over its bound.
//
// The tenants' limits are small (600 requests a minute, burst 60):
// the limiter's Auto sharing keeps them strict, one round trip per call,
// within b + r·dt exactly. The routes' limits are large (burst 1,000
// and more): Auto leases them, a round trip per lease of ten calls or
// more, within b + r·dt plus what the three instances' leases hold.
//
//	go run ./examples/fleet                       # starts a redis-server from the PATH
//	go run ./examples/fleet -redis 127.0.0.1:6379 # or uses yours (keys under "fleet-<time>:")
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"
	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

const (
	instances = 3
	tenants   = 10
	gpt       = "gpt-4o-mini"
	claude    = "claude-haiku-4-5"
)

// The limits, per minute. Auto makes the client limit strict (its burst
// is under 1,000) and the routes' leased.
var (
	clientLimits = ratelimit.Limits{Requests: 600, RequestBurst: 60}
	openaiLimits = ratelimit.Limits{Requests: 1_200, RequestBurst: 1_000, Tokens: 2_000_000}
	claudeLimits = ratelimit.Limits{Requests: 60_000, Tokens: 20_000_000}
)

func main() {
	addr := flag.String("redis", "", "Redis address (host:port); empty starts a redis-server from the PATH")
	every := flag.Duration("every", 10*time.Millisecond, "each instance sends a request this often")
	healthy := flag.Duration("healthy", 4*time.Second, "how long the fleet runs before OpenAI goes down")
	down := flag.Duration("outage", 2*time.Second, "how long OpenAI answers 503 to everything")
	healed := flag.Duration("healed", 3*time.Second, "how long the fleet runs after OpenAI is back")
	flag.Parse()
	if err := run(os.Stdout, config{addr: *addr, every: *every, phases: []time.Duration{*healthy, *down, *healed}}); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// config is what a run takes: the flags.
type config struct {
	addr   string          // Redis; empty starts one
	every  time.Duration   // each instance's pace
	phases []time.Duration // healthy, OpenAI down, healed
}

// phaseNames name config.phases.
var phaseNames = []string{"healthy", "openai down", "healed"}

func run(w io.Writer, cfg config) error {
	started := ""
	if cfg.addr == "" {
		addr, stop, err := startRedis()
		if err != nil {
			return err
		}
		defer stop()
		cfg.addr, started = addr, " (started here)"
	}
	prefix := fmt.Sprintf("fleet-%d:", time.Now().UnixNano()) // apart from other runs on a server given
	f, err := newFleet(cfg.addr, prefix)
	if err != nil {
		return err
	}
	defer f.close()
	fmt.Fprintf(w, "fleet: %d instances over one Redis at %s%s, %d tenants, a request every %v per instance\n",
		instances, cfg.addr, started, tenants, cfg.every)
	at := time.Duration(0)
	for i, d := range cfg.phases {
		fmt.Fprintf(w, "  %-12s %5.1fs to %5.1fs\n", phaseNames[i], at.Seconds(), (at + d).Seconds())
		at += d
	}
	f.load(cfg)
	f.report(w)
	return nil
}

// fleet is the three instances, the fakes they call and what was seen.
type fleet struct {
	oai      *fakeopenai.Server
	oaiHTTP  *httptest.Server
	ant      *fakeanthropic.Server
	down     atomic.Bool // OpenAI answers 503
	clients  [instances]*redis.Client
	cools    [instances]*redisstore.Cooldowns
	st       [instances]*stack.Stack
	trips    trips
	start    time.Time
	mu       sync.Mutex
	phase    int
	stats    [instances]stats
	reqs     [3]int                     // requests sent per phase
	rt       [3]tally                   // Redis round trips per phase
	admitted map[string][]time.Duration // the client limit's admissions per tenant, from start
	routeIn  []time.Duration            // the OpenAI route limit's admissions, from start
}

// stats are one instance's outcomes.
type stats struct {
	sent, openai, anthropic, clientLimited, failed int
}

func newFleet(addr, prefix string) (*fleet, error) {
	f := &fleet{admitted: map[string][]time.Duration{}}
	var err error
	if f.oai, err = fakeopenai.New(fakeopenai.Config{Seed: 1, Models: []fakeopenai.ModelConfig{{Name: gpt, Latency: 2 * time.Millisecond, TokensPerSecond: 2000}}}); err != nil {
		return nil, err
	}
	h := f.oai.Handler()
	f.oaiHTTP = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if f.down.Load() { // the outage: every request answered 503
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(rw, `{"error":{"message":"the server is overloaded","type":"server_error"}}`)
			return
		}
		h.ServeHTTP(rw, r)
	}))
	if f.ant, err = fakeanthropic.Start(fakeanthropic.Config{Seed: 2, Models: []fakeanthropic.ModelConfig{{Name: claude, Latency: 2 * time.Millisecond, TokensPerSecond: 2000}}}); err != nil {
		f.oaiHTTP.Close()
		return nil, err
	}
	for i := range instances {
		if err := f.instance(i, addr, prefix); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// instance builds instance i: its Redis client, Store and stack.
func (f *fleet) instance(i int, addr, prefix string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	f.clients[i] = c
	if err := c.Ping(context.Background()).Err(); err != nil { // the handshake, before counting
		return err
	}
	c.AddHook(&f.trips)
	s, err := redisstore.New(redisstore.Config{Client: c, Prefix: prefix, Timeout: time.Second})
	if err != nil {
		return err
	}
	cool := s.Cooldowns()
	f.cools[i] = cool
	buckets := ratelimit.Shared{Store: s.Buckets(), FailOpen: true, Instances: instances}
	budgets := retry.Shared{Store: s.Budgets(), FailOpen: true, Instances: instances}
	route := func(name string, m portico.Model, lim ratelimit.Limits) stack.Route {
		return stack.Route{
			Route:   portico.Route{Name: name, Model: m, Capabilities: portico.Capabilities{Provider: name, ContextWindow: 128_000, MaxOutput: 4096}},
			Limiter: &ratelimit.Config{Limits: lim, Shared: buckets}, // Sharing Auto: leased, the limits are large
			Breaker: breaker.Config{OpenFor: 500 * time.Millisecond, Shared: cool},
			Retry:   retry.Config{Budget: retry.Budget{Shared: budgets}},
		}
	}
	oa := openai.New(openai.Config{Model: gpt}, openaisdk.WithBaseURL(f.oaiHTTP.URL+"/v1/"), openaisdk.WithAPIKey("sk-fleet"),
		openaisdk.WithHTTPClient(f.oaiHTTP.Client()))
	an := anthropic.New(anthropic.Config{Model: claude}, anthropicsdk.WithBaseURL(f.ant.BaseURL()), anthropicsdk.WithAPIKey("sk-fleet"),
		anthropicsdk.WithHTTPClient(f.ant.Client()))
	ro := route("openai", oa, openaiLimits)
	ro.Order = func(l stack.Layers) []portico.Middleware { // note each call the route's limiter admits
		lim := l.Limiter
		l.Limiter = func(next portico.Model) portico.Model {
			return lim(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
				f.mu.Lock()
				f.routeIn = append(f.routeIn, time.Since(f.start))
				f.mu.Unlock()
				return next.Generate(ctx, r)
			}))
		}
		return stack.Recipe(l)
	}
	f.st[i], err = stack.New(stack.Config{
		Routes:   []stack.Route{ro, route("anthropic", an, claudeLimits)},
		Client:   &ratelimit.Config{Limits: clientLimits, Shared: buckets}, // Sharing Auto: strict, the limit is small
		Fallback: fallback.Config{Cooldowns: cool},
		Deadline: 5 * time.Second,
	})
	return err
}

func (f *fleet) close() {
	for i := range instances {
		if f.cools[i] != nil {
			f.cools[i].Close()
		}
		if f.clients[i] != nil {
			f.clients[i].Close()
		}
	}
	if f.oaiHTTP != nil {
		f.oaiHTTP.Close()
	}
	if f.ant != nil {
		f.ant.Close()
	}
}

// load sends through each instance a request every cfg.every, tenants in
// turn, through the phases; an instance with 8 requests in flight skips
// its turn, so the load stays what the machine can serve.
func (f *fleet) load(cfg config) {
	const inFlight = 8
	var wg sync.WaitGroup
	var slots [instances]chan struct{}
	for i := range slots {
		slots[i] = make(chan struct{}, inFlight)
	}
	tick := time.NewTicker(cfg.every)
	defer tick.Stop()
	f.start = time.Now()
	n := 0
	for p, d := range cfg.phases {
		f.mu.Lock()
		f.phase = p
		f.mu.Unlock()
		f.down.Store(p == 1)
		before := f.trips.get()
		for end := time.Now().Add(d); time.Now().Before(end); n++ {
			<-tick.C
			for i := range instances {
				select {
				case slots[i] <- struct{}{}:
				default:
					continue
				}
				tenant := fmt.Sprintf("tenant-%02d", (n*instances+i)%tenants)
				f.mu.Lock()
				f.reqs[p]++
				f.mu.Unlock()
				wg.Go(func() {
					defer func() { <-slots[i] }()
					f.send(i, tenant)
				})
			}
		}
		wg.Wait() // the phase's requests end in it: their round trips are its own
		f.rt[p] = f.trips.get().minus(before)
	}
}

// send sends one request of tenant through instance i and notes its
// outcome.
func (f *fleet) send(i int, tenant string) {
	at := time.Since(f.start)
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "summarise the ticket")},
		MaxOutputTokens: 32, Identity: portico.Identity{ClientKey: tenant}}
	resp, err := f.st[i].Generate(context.Background(), req)
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.stats[i]
	s.sent++
	refused := portico.RefuserOf(err) == portico.ClientLimit
	if !refused {
		f.admitted[tenant] = append(f.admitted[tenant], at)
	}
	switch {
	case err == nil && resp.Route == "openai":
		s.openai++
	case err == nil:
		s.anthropic++
	case refused:
		s.clientLimited++
	default:
		s.failed++
	}
}

// report prints what the fleet admitted, its round trips and its bounds.
func (f *fleet) report(w io.Writer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(w, "\n%-9s %6s %8s %10s %13s %15s %7s\n", "instance", "sent", "answered", "by openai", "by anthropic", "client-limited", "failed")
	var total stats
	for i, s := range f.stats {
		fmt.Fprintf(w, "%-9d %6d %8d %10d %13d %15d %7d\n", i+1, s.sent, s.openai+s.anthropic, s.openai, s.anthropic, s.clientLimited, s.failed)
		total.sent += s.sent
		total.openai += s.openai
		total.anthropic += s.anthropic
		total.clientLimited += s.clientLimited
		total.failed += s.failed
	}
	fmt.Fprintf(w, "%-9s %6d %8d %10d %13d %15d %7d\n", "all", total.sent, total.openai+total.anthropic, total.openai, total.anthropic, total.clientLimited, total.failed)

	fmt.Fprintf(w, "\nRedis round trips per request (client limit strict, route limits leased; a script counts for the limit\n"+
		"its first key names, so the preset's admission, one script for the client, the first route and the retry budget, the client's):\n")
	fmt.Fprintf(w, "%-12s %8s %11s %12s %14s %14s %12s\n", "phase", "requests", "round trips", "per request", "client limit", "route limits", "other")
	for p, name := range phaseNames {
		r, n := f.rt[p], float64(max(f.reqs[p], 1))
		fmt.Fprintf(w, "%-12s %8d %11d %12.3f %14.3f %14.3f %12.3f\n", name, f.reqs[p], r.all, float64(r.all)/n,
			float64(r.client)/n, float64(r.route)/n, float64(r.all-r.client-r.route)/n)
	}

	fmt.Fprintf(w, "\nworst excess of what a limit admitted over b + r·dt, over any interval:\n")
	cb, cr := float64(clientLimits.RequestBurst), float64(clientLimits.Requests)/60
	worstClient, who := -cb, ""
	for t, in := range f.admitted {
		if e := excess(in, cb, cr); e > worstClient {
			worstClient, who = e, t
		}
	}
	fmt.Fprintf(w, "  client limit, strict (b %.0f, r %.0f/s, per tenant): %+.0f requests (%s); bound 0\n", cb, cr, worstClient, who)
	ob, or := float64(openaiLimits.RequestBurst), float64(openaiLimits.Requests)/60
	lease := float64(max(openaiLimits.RequestBurst/100, 1))
	fmt.Fprintf(w, "  openai route limit, leased (b %.0f, r %.0f/s): %+.0f requests of %d admitted; bound L = %.0f (%d instances' leases of %.0f)\n",
		ob, or, excess(f.routeIn, ob, or), len(f.routeIn), instances*lease, instances, lease)
}

// excess returns the largest count of admissions in an interval less
// b + r·dt, dt the interval's length, over every interval between two
// admissions (times from the run's start).
func excess(at []time.Duration, b, r float64) float64 {
	at = slices.Clone(at)
	slices.Sort(at)
	worst := -b
	for i := range at {
		for j := i; j < len(at); j++ {
			worst = max(worst, float64(j-i+1)-(b+r*(at[j]-at[i]).Seconds()))
		}
	}
	return worst
}

// trips counts the commands the instances send Redis, by the limiter
// whose key they name (a pipeline counts once): their round trips.
type trips struct {
	mu sync.Mutex
	t  tally
}

// tally is a count of round trips: all, and those of the client limit
// and the route limits.
type tally struct{ all, client, route int }

func (t tally) minus(u tally) tally {
	return tally{t.all - u.all, t.client - u.client, t.route - u.route}
}

func (h *trips) get() tally {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.t
}

func (h *trips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		key := ""
		if a := cmd.Args(); len(a) > 3 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			key, _ = a[3].(string)
		}
		h.mu.Lock()
		h.t.all++
		switch {
		case strings.Contains(key, ":rl:") && strings.Contains(key, "client|"):
			h.t.client++
		case strings.Contains(key, ":rl:") && strings.Contains(key, "route%20"): // "route " and the name, escaped
			h.t.route++
		}
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (h *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.t.all++
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}
