package fallback

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

func names(cs []Candidate) []string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Route.Name)
	}
	return s
}

func cands(cs ...Candidate) Ranking {
	for i := range cs {
		cs[i].Index = i
		cs[i].Route = &portico.Route{Name: string(rune('a' + i))}
	}
	return Ranking{Candidates: cs}
}

func TestByLatencyOrder(t *testing.T) {
	const ms = time.Millisecond
	r := cands(Candidate{Latency: 0}, Candidate{Latency: 300 * ms}, Candidate{Latency: 100 * ms}, Candidate{Latency: 0}, Candidate{Latency: 100 * ms})
	if got, want := names(ByLatency(r)), []string{"c", "e", "b", "a", "d"}; !eq(got, want) {
		t.Errorf("ByLatency = %v, want %v (fastest first, ties in order, unmeasured last)", got, want)
	}
}

func TestByHealthOrder(t *testing.T) {
	r := cands(
		Candidate{SinceFailure: time.Second},      // failed 1 s ago
		Candidate{SinceFailure: -1},               // never
		Candidate{SinceFailure: 30 * time.Second}, // 30 s ago
		Candidate{SinceFailure: HealthMemory},     // forgotten
		Candidate{SinceFailure: 0},                // just now
		Candidate{SinceFailure: 2 * HealthMemory}, // forgotten
	)
	if got, want := names(ByHealth(r)), []string{"b", "d", "f", "c", "a", "e"}; !eq(got, want) {
		t.Errorf("ByHealth = %v, want %v", got, want)
	}
}

func TestRankersDoNotAllocate(t *testing.T) {
	r := cands(Candidate{EstimatedCost: 3, Latency: 2, SinceFailure: 5}, Candidate{EstimatedCost: 1, Latency: 1, SinceFailure: -1}, Candidate{EstimatedCost: 2, Latency: 3, SinceFailure: 1})
	for name, rk := range map[string]Ranker{"ByCost": ByCost, "ByLatency": ByLatency, "ByHealth": ByHealth} {
		if n := testing.AllocsPerRun(100, func() { rk(r) }); n != 0 {
			t.Errorf("%s allocs = %v, want 0", name, n)
		}
	}
}

// slow is a route Model that takes its current delay, then answers or fails.
type slow struct {
	fake
	delay time.Duration
}

func (s *slow) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	s.mu.Lock()
	d := s.delay
	s.mu.Unlock()
	time.Sleep(d)
	return s.fake.Generate(ctx, req)
}

// TestGroupLearnsLatency: the group measures each route's successes with
// RFC 6298's smoothing (new = old + (sample-old)/8), and ByLatency moves
// traffic to the faster route once both are measured.
func TestGroupLearnsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &slow{fake: fake{name: "a"}, delay: 800 * time.Millisecond}
		b := &slow{fake: fake{name: "b"}, delay: 200 * time.Millisecond}
		var seen [][]Candidate
		spy := func(r Ranking) []Candidate {
			seen = append(seen, append([]Candidate(nil), r.Candidates...))
			return ByLatency(r)
		}
		g := MustNew(Config{Ranker: spy, Routes: []portico.Route{{Name: "a", Model: a}, {Name: "b", Model: b}}})
		ask := func() string {
			t.Helper()
			resp, err := g.Generate(context.Background(), simple)
			if err != nil {
				t.Fatalf("Generate = %v", err)
			}
			return resp.Route
		}
		if r := ask(); r != "a" {
			t.Fatalf("first answer from %s, want a (nothing measured: configured order)", r)
		}
		a.set(perr(portico.Transient)) // b gets its first measurement
		if r := ask(); r != "b" {
			t.Fatalf("second answer from %s, want b", r)
		}
		a.set(nil)
		if r := ask(); r != "b" {
			t.Fatalf("third answer from %s, want b (200 ms < 800 ms)", r)
		}
		if l := seen[2][0].Latency; l != 800*time.Millisecond {
			t.Errorf("a's Latency = %v, want 800ms (its one success)", l)
		}
		// b: 200 ms, then 200 ms again: still 200 ms. a's failed call took
		// 800 ms but failures are not latency samples.
		b.mu.Lock()
		b.delay = 1000 * time.Millisecond
		b.mu.Unlock()
		ask() // b: 200 + (1000-200)/8 = 300 ms
		g.Generate(context.Background(), simple)
		if l := seen[4][1].Latency; l != 300*time.Millisecond {
			t.Errorf("b's Latency = %v, want 300ms (200 + (1000-200)/8)", l)
		}
	})
}

// TestGroupLearnsFailures: with ByHealth a route that failed is tried last
// for HealthMemory, then gets its place back.
func TestGroupLearnsFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
		var last []Candidate
		spy := func(r Ranking) []Candidate {
			last = append(last[:0], r.Candidates...)
			return ByHealth(r)
		}
		g := MustNew(Config{Ranker: spy, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		steps := []struct {
			wait  time.Duration
			route string
			hops  []string
			since time.Duration // a's SinceFailure as the ranker saw it
		}{
			{0, "b", []string{"a:transient:transient"}, -1},
			{10 * time.Second, "b", nil, 10 * time.Second},
			{50*time.Second - 1, "b", nil, HealthMemory - 1},
			{1, "a", nil, HealthMemory},
		}
		for i, s := range steps {
			time.Sleep(s.wait)
			if i == 1 {
				a.set(nil)
			}
			resp, err := g.Generate(context.Background(), simple)
			if err != nil || resp.Route != s.route || !eq(hopsOf(t, resp.Hops), s.hops) || last[0].SinceFailure != s.since {
				t.Errorf("step %d: %v (%v), a's SinceFailure %v; want %s with hops %v, %v", i, resp, err, last[0].SinceFailure, s.route, s.hops, s.since)
			}
		}
		if a.n() != 2 {
			t.Errorf("a calls = %d, want 2 (avoided for a minute after failing)", a.n())
		}
	})
}

// TestRankedGroupConcurrent runs 200 goroutines through groups ranked by
// health and by latency (their per-route state is updated without locks):
// every request is answered by b, after a's failure or with a skipped.
func TestRankedGroupConcurrent(t *testing.T) {
	for name, rk := range map[string]Ranker{"ByHealth": ByHealth, "ByLatency": ByLatency} {
		t.Run(name, func(t *testing.T) {
			a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
			g := MustNew(Config{Ranker: rk, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
			var wg sync.WaitGroup
			for range 200 {
				wg.Go(func() {
					for range 5 {
						resp, err := g.Generate(context.Background(), simple)
						if err != nil || resp.Route != "b" {
							t.Errorf("Generate = %v, %v; want b's answer", resp, err)
						}
					}
				})
			}
			wg.Wait()
			if b.n() != 1000 || a.n() < 1 {
				t.Errorf("calls a=%d b=%d, want a >= 1 and b = 1000", a.n(), b.n())
			}
			if l := g.stats[1].latency.Load(); l <= 0 {
				t.Errorf("b's smoothed latency = %d ns, want > 0", l)
			}
			if g.stats[0].latency.Load() != 0 || g.stats[0].failedAt.Load() == 0 {
				t.Errorf("a's stats = %d ns, failed at %d; want no latency and a failure", g.stats[0].latency.Load(), g.stats[0].failedAt.Load())
			}
		})
	}
}

// TestTimeoutsLearnt: a candidate that runs out of its own share of the time
// is marked as failed; one cut short by the caller's own deadline is not.
func TestTimeoutsLearnt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", block: true}, &fake{name: "b", block: true}
		g := MustNew(Config{Ranker: ByHealth, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		g.Generate(ctx, simple) // a: its 4.5 s share runs out; b: 3.2 s, then the caller's ctx has 300 ms left
		if g.stats[0].failedAt.Load() == 0 {
			t.Errorf("a not marked failed after running out of its share")
		}
		if at := g.stats[1].failedAt.Load(); at == 0 {
			t.Errorf("b not marked failed after running out of its allowance")
		}
		// Now a route that returns a Deadline error once the caller's own
		// deadline has passed: the caller's impatience, not the route's fault.
		late := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			time.Sleep(2 * time.Second)
			return nil, perr(portico.Deadline)
		})
		g = MustNew(Config{Ranker: ByHealth, Routes: []portico.Route{{Name: "c", Model: late}}})
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		g.Generate(ctx2, simple)
		if at := g.stats[0].failedAt.Load(); at != 0 {
			t.Errorf("c marked failed at %d, want unmarked: the caller's deadline ended it", at)
		}
	})
}

// TestCallerOnChunkErrorNotLearnt: a streamed call that the caller's own
// OnChunk ended with a Transient error (passed through unchanged by the route)
// is the caller's fault: the group returns it without falling back and does
// not mark the route failed, so ByHealth does not push a healthy route last
// for every caller.
func TestCallerOnChunkErrorNotLearnt(t *testing.T) {
	a, b := &fake{name: "a", chunks: []string{"x"}}, &fake{name: "b"}
	g := MustNew(Config{Ranker: ByHealth, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
	stop := &portico.Error{Class: portico.Transient, Reason: "caller stop"}
	req := simple.Clone()
	req.OnChunk = func(portico.Chunk) error { return stop }
	if _, err := g.Generate(context.Background(), req); err != stop {
		t.Fatalf("Generate = %v, want the callback's error as is", err)
	}
	if at := g.stats[0].failedAt.Load(); at != 0 || b.n() != 0 {
		t.Errorf("a marked failed at %d, b calls %d; want unmarked, 0", at, b.n())
	}
	// The route's own fault while streaming is still learnt.
	a.set(perr(portico.Transient))
	req.OnChunk = func(portico.Chunk) error { return nil }
	g.Generate(context.Background(), req)
	if at := g.stats[0].failedAt.Load(); at == 0 {
		t.Errorf("a not marked failed after its own transient error")
	}
}
