package fallback

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/rank"
)

// figures returns what g learnt about route i, as its Policy sees it.
func figures(g *Group, i int) rank.Candidate {
	c := rank.Candidate{Index: i}
	g.stats.Fill(&c)
	return c
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
// RFC 6298's smoothing (new = old + (sample-old)/8), and rank.ByLatency
// moves traffic to the faster route once both are measured.
func TestGroupLearnsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &slow{fake: fake{name: "a"}, delay: 800 * time.Millisecond}
		b := &slow{fake: fake{name: "b"}, delay: 200 * time.Millisecond}
		g := MustNew(Config{Policy: rank.ByLatency, Routes: []portico.Route{{Name: "a", Model: a}, {Name: "b", Model: b}}})
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
		if l := figures(g, 0).Latency; l != 800*time.Millisecond {
			t.Errorf("a's Latency = %v, want 800ms (its one success)", l)
		}
		// b: 200 ms, then 200 ms again: still 200 ms. a's failed call took
		// 800 ms but failures are not latency samples.
		b.mu.Lock()
		b.delay = 1000 * time.Millisecond
		b.mu.Unlock()
		ask() // b: 200 + (1000-200)/8 = 300 ms
		if l := figures(g, 1).Latency; l != 300*time.Millisecond {
			t.Errorf("b's Latency = %v, want 300ms (200 + (1000-200)/8)", l)
		}
	})
}

// TestGroupLearnsFailures: with rank.ByHealth a route that failed is tried last
// for rank.HealthMemory, then gets its place back.
func TestGroupLearnsFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
		g := MustNew(Config{Policy: rank.ByHealth, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		steps := []struct {
			wait  time.Duration
			route string
			hops  []string
			since time.Duration // a's SinceFailure as the policy saw it
		}{
			{0, "b", []string{"a:transient:transient"}, -1},
			{10 * time.Second, "b", nil, 10 * time.Second},
			{50*time.Second - 1, "b", nil, rank.HealthMemory - 1},
			{1, "a", nil, rank.HealthMemory},
		}
		for i, s := range steps {
			time.Sleep(s.wait)
			if i == 1 {
				a.set(nil)
			}
			since := figures(g, 0).SinceFailure
			resp, err := g.Generate(context.Background(), simple)
			if err != nil || resp.Route != s.route || !eq(hopsOf(t, resp.Hops), s.hops) || since != s.since {
				t.Errorf("step %d: %v (%v), a's SinceFailure %v; want %s with hops %v, %v", i, resp, err, since, s.route, s.hops, s.since)
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
	for name, p := range map[string]rank.Policy{"ByHealth": rank.ByHealth, "ByLatency": rank.ByLatency} {
		t.Run(name, func(t *testing.T) {
			a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
			g := MustNew(Config{Policy: p, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
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
			fa, fb := figures(g, 0), figures(g, 1)
			if fb.Latency <= 0 || fb.InFlight != 0 || fb.Observed != 1000 {
				t.Errorf("b's figures = %+v, want a latency, none in flight, 1000 observed", fb)
			}
			if fa.Latency != 0 || fa.SinceFailure < 0 || fa.ErrorRate != 1 || fa.InFlight != 0 {
				t.Errorf("a's figures = %+v; want no latency, a failure, error rate 1, none in flight", fa)
			}
		})
	}
}

// TestTimeoutsLearnt: a candidate that runs out of its own share of the time
// is marked as failed (every cut counts here, FaultAfter -1: the shares of
// 8 s are shorter than its default; TestShortShareNotAFaultForPolicy has
// the default); one cut short by the caller's own deadline is not.
func TestTimeoutsLearnt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", block: true}, &fake{name: "b", block: true}
		g := MustNew(Config{Policy: rank.ByHealth, FaultAfter: -1, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		g.Generate(ctx, simple) // a: its 4.5 s share runs out; b: 3.2 s, then the caller's ctx has 300 ms left
		if figures(g, 0).SinceFailure < 0 {
			t.Errorf("a not marked failed after running out of its share")
		}
		if figures(g, 1).SinceFailure < 0 {
			t.Errorf("b not marked failed after running out of its allowance")
		}
		// Now a route that returns a Deadline error once the caller's own
		// deadline has passed: the caller's impatience, not the route's fault.
		late := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			time.Sleep(2 * time.Second)
			return nil, perr(portico.Deadline)
		})
		g = MustNew(Config{Policy: rank.ByHealth, Routes: []portico.Route{{Name: "c", Model: late}}})
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		g.Generate(ctx2, simple)
		if f := figures(g, 0); f.SinceFailure >= 0 || f.InFlight != 0 {
			t.Errorf("c's figures = %+v, want no failure and none in flight: the caller's deadline ended it", f)
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
	g := MustNew(Config{Policy: rank.ByHealth, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
	stop := &portico.Error{Class: portico.Transient, Reason: "caller stop"}
	req := simple.Clone()
	req.OnChunk = func(portico.Chunk) error { return stop }
	if _, err := g.Generate(context.Background(), req); err != stop {
		t.Fatalf("Generate = %v, want the callback's error as is", err)
	}
	if f := figures(g, 0); f.SinceFailure >= 0 || f.InFlight != 0 || b.n() != 0 {
		t.Errorf("a's figures %+v, b calls %d; want no failure, none in flight, 0", f, b.n())
	}
	// The route's own fault while streaming is still learnt.
	a.set(perr(portico.Transient))
	req.OnChunk = func(portico.Chunk) error { return nil }
	g.Generate(context.Background(), req)
	if figures(g, 0).SinceFailure < 0 {
		t.Errorf("a not marked failed after its own transient error")
	}
}
