package main_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/redisstore"
)

// phase is a part of a run, by what Redis did.
type phase struct {
	name string
	dur  time.Duration
	do   func() // at its start, on the pacing goroutine
}

// pace sends a request through each instance every 10 ms through the
// phases and returns each phase's outcomes. An instance with inFlight
// requests under way skips the tick: the load stays what the machine
// can serve. Open loop, a CPU starved by -race and other processes (2
// cores) fell behind, the requests in flight grew to hundreds and every
// one took seconds, whatever Redis did.
func (f *fleet) pace(t *testing.T, tenants int, phases []phase) map[string][]outcome {
	t.Helper()
	const inFlight = 4
	var (
		mu      sync.Mutex
		out     = map[string][]outcome{}
		wg      sync.WaitGroup
		slots   [fleetN]chan struct{}
		skipped int
	)
	for i := range slots {
		slots[i] = make(chan struct{}, inFlight)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	n := 0
	for _, p := range phases {
		if p.do != nil {
			p.do()
		}
		for end := time.Now().Add(p.dur); time.Now().Before(end); n++ {
			<-tick.C
			n := n
			for i := range fleetN {
				select {
				case slots[i] <- struct{}{}:
				default:
					skipped++
					continue
				}
				wg.Go(func() {
					defer func() { <-slots[i] }()
					r := request(tenant(n%tenants), n%2 == 0)
					t0 := time.Now()
					resp, err := f.st[i].Generate(context.Background(), r)
					o := outcome{tenant: r.Identity.ClientKey, err: err, took: time.Since(t0), at: t0}
					if err == nil {
						o.route = resp.Route
					}
					mu.Lock()
					out[p.name] = append(out[p.name], o)
					mu.Unlock()
				})
			}
		}
	}
	wg.Wait()
	t.Logf("%d sends skipped: %d requests in flight on their instance", skipped, inFlight)
	return out
}

func tally(out []outcome) (map[string]int, time.Duration) {
	m := map[string]int{}
	var slowest time.Duration
	for _, o := range out {
		if o.err != nil {
			m["class:"+portico.ClassOf(o.err).String()]++
		} else {
			m["route:"+o.route]++
		}
		slowest = max(slowest, o.took)
	}
	return m, slowest
}

// TestFleetRedisOutage: Redis asleep for a second, then stopped for 400 ms,
// then back (empty), under steady load from 30 tenants with shared
// limits that fail open. No call waits on Redis past the store's timeout,
// and every instance is back on the shared state after its probe.
//
// The promise is about what calls wait on, so it is checked on every
// command the instances send (a hook on their clients), not on request
// latencies, which a starved CPU stretches whatever Redis does (2 cores,
// -race, every module's tests at once: healthy requests over 250 ms).
// The streams' timeouts are newFleet's relaxed ones for the same reason:
// a stream stalled by the scheduler, not Redis, is not this test's matter.
func TestFleetRedisOutage(t *testing.T) {
	const timeout = 50 * time.Millisecond // the store's, the default
	f := newFleet(t, setup{client: 6000, openai: 60000, store: redisstore.Config{Timeout: timeout, Probe: 100 * time.Millisecond}})
	var slept sync.WaitGroup
	out := f.pace(t, 30, []phase{
		{name: "healthy", dur: 200 * time.Millisecond},
		{name: "slow", dur: time.Second, do: func() { slept.Go(func() { f.redis.Sleep(t, time.Second) }) }},
		{name: "after slow", dur: 300 * time.Millisecond, do: slept.Wait}, // a starved sleeper sent it late: stop the server after
		{name: "down", dur: 400 * time.Millisecond, do: f.redis.Stop},
		{name: "back", dur: 300 * time.Millisecond, do: f.redis.Restart},
		{name: "healed", dur: 200 * time.Millisecond},
	})
	for _, p := range []string{"healthy", "slow", "after slow", "down", "back", "healed"} {
		m, slowest := tally(out[p])
		t.Logf("%-10s %3d requests: %v; slowest %v", p, len(out[p]), m, slowest)
		// Only the client limiter's local shares, a third of each
		// tenant's limit, may refuse (fail open); healthy, nothing.
		if refused := len(out[p]) - m["route:openai"] - m["route:anthropic"]; refused != m["class:rate_limited"] ||
			(p == "healthy" || p == "healed") && refused != 0 {
			t.Errorf("%s: %v; want answers, and RateLimited only while Redis fails", p, m)
		}
	}
	// Nothing waits on Redis past its timeout: every command carries a
	// deadline at most the store's Timeout after it starts (a starved
	// goroutine may start one past it), and returns by it. late is the
	// scheduler's share: the time a starved process takes to run the
	// timer and the waiting goroutine once the deadline passed (up to
	// 365 ms seen at load 15 on 2 cores under -race, with requests in
	// flight unbounded). A command that waited for the sleeping server
	// instead would return with its reply at the end of the sleep: those
	// sent in its first half wait longer than timeout + late.
	const late = 450 * time.Millisecond
	timedOut := 0
	for _, c := range f.sent.sent() {
		if !c.bounded || c.deadline > timeout {
			t.Errorf("%s sent with a deadline %v after its start, want at most the store's Timeout %v", c.name, c.deadline, timeout)
		}
		if c.took > c.deadline+late {
			t.Errorf("%s waited %v (%v), want at most its deadline %v + %v: nothing waits on Redis past its timeout", c.name, c.took, c.err, c.deadline, late)
		}
		if errors.Is(c.err, os.ErrDeadlineExceeded) || errors.Is(c.err, context.DeadlineExceeded) {
			timedOut++
		}
	}
	if timedOut == 0 {
		t.Error("no command timed out: the sleeping server held none, the test injected no fault")
	}
	if m, _ := tally(out["healed"]); m["route:openai"] != len(out["healed"]) {
		t.Errorf("healed: %v; want every request answered by OpenAI", m)
	}
	// Back after its probe: each Store's Cooldowns reads Redis every
	// Refresh, so a Store whose operation a starved CPU timed out after
	// the restart probes again Probe later without a request.
	for i, s := range f.stores {
		waitFor(t, 3*time.Second, "instance "+strconv.Itoa(i)+"'s store available after the server came back", s.Available)
	}
	var all []outcome
	for _, o := range out {
		all = append(all, o...)
	}
	f.noSecrets(t, all)
}

// waitFor polls cond every 5 ms until it holds, failing t after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(limit); !cond(); <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
	}
}

// TestFleetFailOpenShare: with Redis stopped, one tenant allowed 600
// requests a minute, which had not called before, bursts through the three
// instances; their local shares (200 a minute each, full: the tenant had
// used none of them) admit from the first call what the shared limit
// would have, all 100 calls (its burst is 600).
func TestFleetFailOpenShare(t *testing.T) {
	f := newFleet(t, setup{client: 600, store: redisstore.Config{Probe: time.Minute}})
	if _, err := f.st[0].Generate(t.Context(), request("warm", false)); err != nil {
		t.Fatal(err)
	}
	f.redis.Stop()
	start := time.Now()
	var out []outcome
	tick := time.NewTicker(4 * time.Millisecond)
	defer tick.Stop()
	for i := range 100 { // about 400 ms
		<-tick.C
		o := outcome{}
		if resp, err := f.st[i%fleetN].Generate(t.Context(), request("burst", false)); err != nil {
			o.err = err
		} else {
			o.route = resp.Route
		}
		out = append(out, o)
	}
	elapsed := time.Since(start)
	m, slowest := tally(out)
	if m["route:openai"] != len(out) {
		t.Errorf("%v in %v (slowest %v); want %d answers", m, elapsed, slowest, len(out))
	}
	f.noSecrets(t, out)
}
