package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/portico-llm/portico"
)

// results is what the load saw, collected by an Observer on the calls' contexts
// (every layer reports its waits, retries and exhaustions there) and by the
// callers themselves.
type results struct {
	mu            sync.Mutex
	requests      int
	accepted      int
	streamed      int
	failed        map[portico.Class]int
	retries       map[portico.Class]int
	budgetOut     int
	limiterWaits  int
	limiterWaited time.Duration
	latencies     []time.Duration
	breakerOpens  int
	// serverRequests is how many HTTP requests reached the fake server; -1
	// against a real endpoint.
	serverRequests int
}

// Observe implements portico.Observer.
func (r *results) Observe(_ context.Context, e portico.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case portico.EventRetry:
		r.retries[e.Class]++
	case portico.EventBudgetExhausted:
		r.budgetOut++
	case portico.EventRateLimitWait:
		r.limiterWaits++
		r.limiterWaited += e.Delay
	}
}

func (r *results) done(d time.Duration, streamed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.latencies = append(r.latencies, d)
	if err != nil {
		r.failed[portico.ClassOf(err)]++
		return
	}
	r.accepted++
	if streamed {
		r.streamed++
	}
}

// load sends cfg.requests requests, cfg.concurrency at a time, round robin over
// cfg.clients client keys; every other request streams.
func load(ctx context.Context, m portico.Model, cfg runConfig, res *results) {
	ctx = portico.ContextWithObserver(ctx, res)
	work := make(chan int)
	var wg sync.WaitGroup
	for range cfg.concurrency {
		wg.Go(func() {
			for i := range work {
				stream := i%2 == 1
				req := &portico.Request{
					Messages: []portico.Message{
						portico.Text(portico.RoleSystem, "You answer in one short sentence."),
						portico.Text(portico.RoleUser, "Name a prime number above "+strconv.Itoa(i)+"."),
					},
					MaxOutputTokens: 64,
					Identity:        portico.Identity{ClientKey: "client-" + strconv.Itoa(i%cfg.clients)},
				}
				if stream {
					req.OnChunk = func(portico.Chunk) error { return nil }
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				start := time.Now()
				_, err := m.Generate(cctx, req)
				cancel()
				res.done(time.Since(start), stream, err)
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
	retries := 0
	for _, n := range r.retries {
		retries += n
	}
	slices.Sort(r.latencies)
	fmt.Fprintf(w, "requests            %d in %v\n", r.requests, elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "accepted            %d (%.1f%%), %d of them streamed\n", r.accepted, 100*float64(r.accepted)/float64(r.requests), r.streamed)
	fmt.Fprintf(w, "failed              %s\n", classCounts(r.failed))
	fmt.Fprintf(w, "attempts/request    %.3f (%d attempts", float64(r.requests+retries)/float64(r.requests), r.requests+retries)
	if r.serverRequests >= 0 {
		fmt.Fprintf(w, "; the server saw %d", r.serverRequests)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "retries by class    %s\n", classCounts(r.retries))
	fmt.Fprintf(w, "budget exhaustions  %d\n", r.budgetOut)
	fmt.Fprintf(w, "breaker opened      %d times\n", r.breakerOpens)
	fmt.Fprintf(w, "limiter waits       %d (%v in all)\n", r.limiterWaits, r.limiterWaited.Round(time.Millisecond))
	fmt.Fprintf(w, "latency             p50 %v  p99 %v  max %v\n",
		quantile(r.latencies, 0.50), quantile(r.latencies, 0.99), r.latencies[len(r.latencies)-1].Round(time.Millisecond))
}

func classCounts(m map[portico.Class]int) string {
	if len(m) == 0 {
		return "none"
	}
	var s string
	for c := portico.OK; c <= portico.Rejected; c++ {
		if n := m[c]; n > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%v %d", c, n)
		}
	}
	return s
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i].Round(time.Millisecond)
}
