package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/respcache"
)

// results is what the load saw, collected by an Observer on the calls'
// contexts (every layer reports its waits, retries, fallbacks and breaker
// changes there), by the routes' counting layers and by the callers.
type results struct {
	mu            sync.Mutex
	requests      int
	accepted      int
	streamed      int
	unclassified  int // errors that are not a *portico.Error: none expected
	failed        map[portico.Class]int
	retries       map[portico.Class]int
	budgetOut     int
	limiterWaits  int
	limiterWaited time.Duration
	latencies     []time.Duration
	routes        [dial.N]routeStats
	// overshoot is the latest a request returned relative to its deadline:
	// negative when every request returned before it.
	overshoot time.Duration
	// answerAt is when each accepted answer reached its caller, and failAt
	// when each failed request returned, by class, for -plot.
	answerAt []time.Time
	failAt   map[portico.Class][]time.Time
	// start is when the load began.
	start time.Time
	// A chaos run's: the prompts' canary, the error strings carrying it,
	// the tool calls' side effects and what the stack let out.
	canary     string
	errorLeaks int
	effects    *effects
	watch      *watch
	// faults counts the faults the fake servers injected, by kind.
	faults map[fakeopenai.FaultKind]int
	// usage and cost sum the accepted answers' Usage and Cost.
	usage portico.Usage
	cost  float64
	// cached counts the answers the response cache gave (no route), cache
	// its lookups, and spent what each tenant spent today, by tenant.
	cached int
	cache  respcache.Stats
	spent  []float64
}

// systemPrompt is every request's system prompt, marked as a cache
// breakpoint.
const systemPrompt = "You answer in one short sentence."

// routeStats is what one route did.
type routeStats struct {
	mu       sync.Mutex
	calls    int                   // calls the group placed on the route
	answered int                   // of them, answered
	failed   map[portico.Class]int // of them, failed, by class
	attempts int                   // attempts that reached the adapter
	sent     int                   // of them, sent (not Error.NotSent)
	// lateStarts counts attempts started with their deadline passed; minLeft
	// is the least time to the deadline an attempt started with.
	lateStarts int
	minLeft    time.Duration
	// attemptAt is when each attempt started, for -plot.
	attemptAt []time.Time
	// The Observer's counts.
	retries, fallbacks, breakerOpens int
	// answers is how many requests the route answered, by Response.Route,
	// and answerAt when, for -plot.
	answers  int
	answerAt []time.Time
	// server is how many requests its fake server saw; -1 on a real endpoint.
	server int
}

func newResults() *results {
	r := &results{failed: map[portico.Class]int{}, retries: map[portico.Class]int{}, faults: map[fakeopenai.FaultKind]int{},
		failAt: map[portico.Class][]time.Time{}, overshoot: -requestDeadline}
	for i := range r.routes {
		r.routes[i].failed = map[portico.Class]int{}
	}
	return r
}

// route returns the stats of the route named name, or nil.
func (r *results) route(name string) *routeStats {
	for i := range dial.Providers {
		if dial.Providers[i].Name == name {
			return &r.routes[i]
		}
	}
	return nil
}

// Observe implements portico.Observer.
func (r *results) Observe(_ context.Context, e portico.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.route(e.Route)
	switch e.Kind {
	case portico.EventRetry:
		r.retries[e.Class]++
		if rs != nil {
			rs.retries++
		}
	case portico.EventBudgetExhausted:
		r.budgetOut++
	case portico.EventRateLimitWait:
		r.limiterWaits++
		r.limiterWaited += e.Delay
	case portico.EventFallback:
		if rs != nil {
			rs.fallbacks++
		}
	case portico.EventBreakerState:
		if rs != nil && e.Reason == "open" {
			rs.breakerOpens++
		}
	}
}

// done records a request that took d of its deadline limit.
func (r *results) done(d, limit time.Duration, streamed bool, resp *portico.Response, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.latencies = append(r.latencies, d)
	r.overshoot = max(r.overshoot, d-limit)
	if err != nil {
		var pe *portico.Error
		if !errors.As(err, &pe) {
			r.unclassified++
		}
		if r.canary != "" && strings.Contains(err.Error(), r.canary) {
			r.errorLeaks++
		}
		r.failed[portico.ClassOf(err)]++
		r.failAt[portico.ClassOf(err)] = append(r.failAt[portico.ClassOf(err)], time.Now())
		return
	}
	r.accepted++
	r.usage, r.cost = r.usage.Add(resp.Usage), r.cost+resp.Cost
	r.answerAt = append(r.answerAt, time.Now())
	if streamed {
		r.streamed++
	}
	if resp.Route == "" {
		r.cached++
	}
	if rs := r.route(resp.Route); rs != nil {
		rs.answers++
		rs.answerAt = append(rs.answerAt, time.Now())
	}
}

// load sends cfg.requests requests, cfg.concurrency at a time, round robin over
// cfg.clients client keys; every other request streams. In a chaos run
// every prompt carries the canary, a quarter of the requests carry a
// deadline of their own (Contract.Deadline, hurriedDeadline) that a stall
// and a retry can use up, and a quarter (half of them streamed) offer a
// tool the model calls: their side effects run
// through res.effects, and the step is then replayed, as an agent that
// resumes after a crash replays it, sending the request again and running
// its tool calls again under the same operation.
func load(ctx context.Context, m portico.Model, cfg runConfig, res *results) {
	ctx = portico.ContextWithObserver(ctx, res)
	work := make(chan int)
	var wg sync.WaitGroup
	for range cfg.concurrency {
		wg.Go(func() {
			for i := range work {
				stream := i%2 == 1
				// Every fourth request asks again what its tenant asked
				// in the first two rounds: the response cache may answer.
				q := i
				for q%4 == 3 && q >= 2*cfg.clients {
					q -= 2 * cfg.clients
				}
				prompt := "Name a prime number above " + strconv.Itoa(q) + "."
				if res.canary != "" {
					prompt += " " + res.canary
				}
				system := portico.Text(portico.RoleSystem, systemPrompt)
				system.Cache = portico.Cache5m // every request shares it: cache it
				tenant := "tenant-" + strconv.Itoa(i%cfg.clients)
				req := &portico.Request{
					Messages:        []portico.Message{system, portico.Text(portico.RoleUser, prompt)},
					MaxOutputTokens: 64,
					Identity:        portico.Identity{ClientKey: tenant, SessionID: tenant},
				}
				if stream {
					req.OnChunk = func(portico.Chunk) error { return nil }
				}
				tool := res.effects != nil && i%8 < 2
				if tool {
					req.Tools = []portico.Tool{refundTool("order-" + strconv.Itoa(i))}
					req.Identity.OperationID = "op-" + strconv.Itoa(i)
				}
				limit := requestDeadline
				if res.effects != nil && i%8 >= 6 {
					limit = hurriedDeadline
					req.Contract = &portico.Contract{Deadline: limit}
				}
				for range 1 + btoi(tool) {
					start := time.Now()
					resp, err := m.Generate(ctx, req)
					res.done(time.Since(start), limit, stream, resp, err)
					if tool && err == nil {
						res.effects.do(ctx, req, resp)
					}
				}
			}
		})
	}
	for i := range cfg.requests {
		work <- i
	}
	close(work)
	wg.Wait()
}

func (r *results) print(w io.Writer, elapsed time.Duration) {
	retries, attempts, server := 0, 0, 0
	for _, n := range r.retries {
		retries += n
	}
	for i := range r.routes {
		attempts += r.routes[i].attempts
		server += r.routes[i].server
	}
	slices.Sort(r.latencies)
	fmt.Fprintf(w, "requests            %d in %v\n", r.requests, elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "accepted            %d (%.1f%%), %d of them streamed\n", r.accepted, 100*float64(r.accepted)/float64(r.requests), r.streamed)
	fmt.Fprintf(w, "failed              %s\n", classCounts(r.failed))
	fmt.Fprintf(w, "attempts/request    %.3f (%d attempts", float64(attempts)/float64(r.requests), attempts)
	if server >= 0 && !r.anyReal() {
		fmt.Fprintf(w, "; the servers saw %d", server)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "retries by class    %s\n", classCounts(r.retries))
	fmt.Fprintf(w, "budget exhaustions  %d\n", r.budgetOut)
	fmt.Fprintf(w, "limiter waits       %d (%v in all)\n", r.limiterWaits, r.limiterWaited.Round(time.Millisecond))
	fmt.Fprintf(w, "latency             p50 %v  p99 %v  max %v\n",
		quantile(r.latencies, 0.50), quantile(r.latencies, 0.99), r.latencies[len(r.latencies)-1].Round(time.Millisecond))
	fmt.Fprintf(w, "fallbacks           %s\n", r.fallbacks())
	u := &r.usage
	fmt.Fprintf(w, "tokens              input %d (cache reads %d, cache writes %d), output %d (reasoning %d)\n",
		u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens, u.ReasoningTokens)
	fmt.Fprintf(w, "cost                $%.6f (Response.Cost summed, at the routes' prices)\n", r.cost)
	if lookups := r.cache.Hits + r.cache.Misses; lookups > 0 {
		fmt.Fprintf(w, "cache               %d hits of %d lookups (%d answers from it)\n", r.cache.Hits, lookups, r.cached)
	}
	if len(r.spent) > 0 {
		s := slices.Sorted(slices.Values(r.spent))
		total := 0.0
		for _, v := range s {
			total += v
		}
		fmt.Fprintf(w, "spend per tenant    min $%.6f  median $%.6f  max $%.6f  (%d tenants, $%.6f in all, of $%.2f a day each)\n",
			s[0], s[len(s)/2], s[len(s)-1], len(s), total, dailyBudget)
	}
	fmt.Fprintf(w, "%-10s %8s %9s %11s %8s %15s  %s\n", "route", "answered", "attempts", "server saw", "retries", "breaker opened", "failed calls")
	for i := range r.routes {
		rs := &r.routes[i]
		srv := "-"
		if rs.server >= 0 {
			srv = strconv.Itoa(rs.server)
		}
		fmt.Fprintf(w, "%-10s %8d %9d %11s %8d %15d  %s\n", dial.Providers[i].Name, rs.answers, rs.attempts, srv, rs.retries, rs.breakerOpens, classCounts(rs.failed))
	}
}

// fallbacks says how often the group moved on from each route.
func (r *results) fallbacks() string {
	var b strings.Builder
	for i := range r.routes {
		if n := r.routes[i].fallbacks; n > 0 {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "from %s %d", dial.Providers[i].Name, n)
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func (r *results) anyReal() bool {
	for i := range r.routes {
		if r.routes[i].server < 0 {
			return true
		}
	}
	return false
}

func classCounts(m map[portico.Class]int) string {
	var b strings.Builder
	for c := portico.OK; c <= portico.Unusable; c++ {
		if n := m[c]; n > 0 {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%v %d", c, n)
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// hurriedDeadline is the Contract.Deadline of a chaos run's hurried
// requests: a stall ended by the 1 s attempt timeout leaves a retry 200 ms.
const hurriedDeadline = 1200 * time.Millisecond

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i].Round(time.Millisecond)
}
