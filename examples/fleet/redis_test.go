package fleet_test

import (
	"context"
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

// pace sends 3 requests (one per instance) every 10 ms through the phases
// and returns each phase's outcomes.
func (f *fleet) pace(t *testing.T, tenants int, phases []phase) map[string][]outcome {
	t.Helper()
	var (
		mu  sync.Mutex
		out = map[string][]outcome{}
		wg  sync.WaitGroup
	)
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
				wg.Go(func() {
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

// TestFleetRedisOutage: Redis asleep for 300 ms, then stopped for 400 ms,
// then back (empty), under steady load from 30 tenants with shared
// limits that fail open. No call waits on Redis past the store's timeout,
// and every instance is back on the shared state after its probe.
func TestFleetRedisOutage(t *testing.T) {
	f := newFleet(t, setup{client: 6000, openai: 60000, store: redisstore.Config{Probe: 100 * time.Millisecond}})
	var slept sync.WaitGroup
	out := f.pace(t, 30, []phase{
		{name: "healthy", dur: 200 * time.Millisecond},
		{name: "slow", dur: 300 * time.Millisecond, do: func() { slept.Go(func() { f.redis.Sleep(t, 300*time.Millisecond) }) }},
		{name: "after slow", dur: 300 * time.Millisecond},
		{name: "down", dur: 400 * time.Millisecond, do: f.redis.Stop},
		{name: "back", dur: 300 * time.Millisecond, do: f.redis.Restart},
		{name: "healed", dur: 200 * time.Millisecond},
	})
	slept.Wait()
	for _, p := range []string{"healthy", "slow", "after slow", "down", "back", "healed"} {
		m, slowest := tally(out[p])
		t.Logf("%-10s %3d requests: %v; slowest %v", p, len(out[p]), m, slowest)
		// 50 ms for the store, a few for the fake; the deadline is 2 s.
		if slowest > 250*time.Millisecond {
			t.Errorf("%s: a request took %v, want under 250 ms: nothing waits on Redis past its timeout", p, slowest)
		}
		// Only the client limiter's local shares, a third of each
		// tenant's limit, may refuse (fail open); healthy, nothing.
		if refused := len(out[p]) - m["route:openai"] - m["route:anthropic"]; refused != m["class:rate_limited"] ||
			(p == "healthy" || p == "healed") && refused != 0 {
			t.Errorf("%s: %v; want answers, and RateLimited only while Redis fails", p, m)
		}
	}
	if m, _ := tally(out["healed"]); m["route:openai"] != len(out["healed"]) {
		t.Errorf("healed: %v; want every request answered by OpenAI", m)
	}
	for i, s := range f.stores {
		if !s.Available() {
			t.Errorf("instance %d: store not available after the server came back", i)
		}
	}
	var all []outcome
	for _, o := range out {
		all = append(all, o...)
	}
	f.noSecrets(t, all)
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
