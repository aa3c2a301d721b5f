package fallback

import (
	"context"

	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

const ms = time.Millisecond

var idem = &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}

// after answers the route's name after d.
func after(name string, d time.Duration) *modeltest.Fake {
	return modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer(name).Response, Latency: d})
}

func named(name string, m portico.Model) portico.Route { return portico.Route{Name: name, Model: m} }

// hops renders Response.Hops as "route (reason)" strings.
func hops(hs []portico.Hop) string {
	var s []string
	for _, h := range hs {
		s = append(s, h.Route+" ("+h.Reason+")")
	}
	return strings.Join(s, ", ")
}

func TestHedgeAcrossRoutes(t *testing.T) {
	for _, c := range []struct {
		name   string
		routes func() []portico.Route
		req    *portico.Request
		budget hedge.Budget
		route  string
		hops   string
		took   time.Duration
		hedges int
	}{
		{"the hedge to the next fitting route wins", func() []portico.Route {
			b := named("b", after("b", ms))
			b.Health = down{}
			return []portico.Route{named("a", after("a", 10*time.Second)), b, named("c", after("c", time.Second))}
		}, idem, nil, "c", "b (unavailable), a (hedge lost)", 1100 * ms, 1},
		{"the primary answers first", func() []portico.Route {
			return []portico.Route{named("a", after("a", 150*ms)), named("b", after("b", time.Second))}
		}, idem, nil, "a", "b (hedge lost)", 150 * ms, 1},
		{"the primary fails while the hedge runs", func() []portico.Route {
			return []portico.Route{named("a", modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 150 * ms})),
				named("b", after("b", 300*ms))}
		}, idem, nil, "b", "a (transient)", 400 * ms, 1},
		{"the primary fails before the delay: a plain fallback", func() []portico.Route {
			return []portico.Route{named("a", modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 50 * ms})),
				named("b", after("b", 300*ms))}
		}, idem, nil, "b", "a (transient)", 350 * ms, 0},
		{"a request that may not be repeated is not hedged", func() []portico.Route {
			return []portico.Route{named("a", after("a", 10*time.Second)), named("b", after("b", ms))}
		}, &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, NoAmbiguousRetry: true}, nil, "a", "", 10 * time.Second, 0},
		{"an empty budget leaves the primary alone", func() []portico.Route {
			return []portico.Route{named("a", after("a", 10*time.Second)), named("b", after("b", ms))}
		}, idem, &modeltest.Budget{}, "a", "", 10 * time.Second, 0},
	} {
		synctest.Test(t, func(t *testing.T) {
			obs := &events{}
			g := MustNew(Config{Routes: c.routes(), Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: c.budget})})
			start := time.Now()
			resp, err := g.Generate(portico.ContextWithObserver(context.Background(), obs), c.req)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			sent := 0
			for _, e := range obs.ev {
				if e.Kind == portico.EventHedge && e.Reason == "sent" {
					sent++
				}
			}
			if resp.Route != c.route || hops(resp.Hops) != c.hops || time.Since(start) != c.took || sent != c.hedges {
				t.Errorf("%s: answered by %s after %v, hops %q, %d hedges; want %s after %v, hops %q, %d hedges",
					c.name, resp.Route, time.Since(start), hops(resp.Hops), sent, c.route, c.took, c.hops, c.hedges)
			}
		})
	}
}

// A failure that forbids falling back stops the race: the hedge is canceled.
func TestHedgeStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := after("b", time.Second)
		g := MustNew(Config{Routes: []portico.Route{
			named("a", modeltest.NewFake(modeltest.Outcome{Err: &portico.Error{Class: portico.Permanent, Status: 400, Err: modeltest.ErrInjected}, Latency: 150 * ms})), named("b", b)},
			Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms})})
		start := time.Now()
		_, err := g.Generate(context.Background(), idem)
		if portico.ClassOf(err) != portico.Permanent || time.Since(start) != 150*ms || b.Count() != 1 {
			t.Errorf("Generate = %v after %v, b called %d times, want the 400 at 150ms, b called once", err, time.Since(start), b.Count())
		}
	})
}

// Streaming: the first route to deliver a chunk wins, and the caller sees its
// chunks only; the hedge's time share is computed when it starts.
func TestHedgeStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("slow a").Response, TTFT: 5 * time.Second})
		b := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("fast b").Response, TTFT: 200 * ms, ChunkGap: 10 * ms})
		g := MustNew(Config{Routes: []portico.Route{named("a", a), named("b", b)}, Hedge: hedge.MustNew(hedge.Config{Delay: time.Second})})
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		var got []string
		r := idem.Clone()
		r.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
		resp, err := g.Generate(ctx, r)
		if err != nil || resp.Route != "b" || strings.Join(got, "") != "fast b" {
			t.Fatalf("Generate = %v, %v, chunks %q, want b's answer and only its chunks", resp, err, got)
		}
		// a, with a route after it, gets 9/16 of 8 s; b, the last, all but the
		// reserve of the 7 s left when it started.
		if dl := a.Calls()[0].Deadline.Sub(a.Calls()[0].Time); dl != 4500*ms {
			t.Errorf("a's share = %v, want 4.5s", dl)
		}
		if dl := b.Calls()[0].Deadline.Sub(b.Calls()[0].Time); dl != 6700*ms {
			t.Errorf("b's share = %v, want 6.7s", dl)
		}
	})
}

// The group's hedging keeps the Model contract.
func TestHedgeConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
		return MustNew(Config{Routes: []portico.Route{{Name: "a", Model: base, Capabilities: suiteCaps}, {Name: "b", Model: base, Capabilities: suiteCaps}},
			Hedge: hedge.MustNew(hedge.Config{Delay: 5 * ms})})
	})
}

// With a Hedger, a request it may not hedge costs what it would without
// one: without a deadline, the candidate's context that carries the
// route's cooldown.
func TestHedgeNotAppliedAllocs(t *testing.T) {
	ok := &portico.Response{Text: "ok"}
	m := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) { return ok, nil })
	g := MustNew(Config{Routes: []portico.Route{{Name: "a", Model: m}, {Name: "b", Model: m}}, Hedge: hedge.MustNew(hedge.Config{Delay: time.Second})})
	once := &portico.Request{Messages: simple.Messages, NoAmbiguousRetry: true}
	if n := testing.AllocsPerRun(1000, func() { g.Generate(context.Background(), once) }); n != 1 {
		t.Errorf("allocs per first-route success = %v, want 1", n)
	}
}

// A raced request whose primary answers before the delay costs the race
// (hedge's TestAllocs: 12 allocations), the request's state and its plan,
// and the primary's context: without a deadline, the one that carries its
// cooldown; under a Contract.Deadline, that deadline's and the share's
// (as the walk), and the race's cancelable context registered under them.
func TestHedgeRacedAllocs(t *testing.T) {
	ok := &portico.Response{Text: "ok"}
	m := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) { return ok, nil })
	g := MustNew(Config{Routes: []portico.Route{{Name: "a", Model: m}, {Name: "b", Model: m}}, Hedge: hedge.MustNew(hedge.Config{Delay: time.Second})})
	plain := &portico.Request{Messages: simple.Messages}
	timed := &portico.Request{Messages: simple.Messages, Contract: &portico.Contract{Deadline: time.Minute}}
	for _, c := range []struct {
		name string
		req  *portico.Request
		want float64
	}{{"no deadline", plain, 15}, {"Contract.Deadline", timed, 29}} {
		if n := testing.AllocsPerRun(1000, func() { g.Generate(context.Background(), c.req) }); n != c.want {
			t.Errorf("%s: allocs per raced request = %v, want %v", c.name, n, c.want)
		}
	}
	once := &portico.Request{Messages: simple.Messages, Contract: timed.Contract, NoAmbiguousRetry: true}
	if n := testing.AllocsPerRun(1000, func() { g.Generate(context.Background(), once) }); n != 12 {
		t.Errorf("Contract.Deadline, not hedged: allocs per request = %v, want 12", n)
	}
}

// TestHedgedPanic: a raced route's panic goes on to the caller, and the
// next request is served as if none had happened.
func TestHedgedPanic(t *testing.T) {
	calls := 0
	boom := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		if calls++; calls == 1 {
			panic("boom")
		}
		return modeltest.Answer("a").Response, nil
	})
	g := MustNew(Config{Routes: []portico.Route{named("a", boom), named("b", after("b", ms))},
		Hedge: hedge.MustNew(hedge.Config{Delay: time.Hour})})
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want boom", p)
			}
		}()
		g.Generate(context.Background(), idem)
		t.Error("Generate returned, want its panic")
	}()
	if resp, err := g.Generate(context.Background(), idem); err != nil || resp.Route != "a" {
		t.Errorf("Generate after the panic = %+v, %v; want a's answer", resp, err)
	}
}

// The primary fails (503) at the very instant the hedge to the second
// route falls due: whichever of the two the race sees first, the second
// route is called, as a hedge or as the next route, and answers. A hedge
// budget that waits for its token widens the tie. Many bubbles, to see
// both orders.
func TestHedgeDueAsThePrimaryFails(t *testing.T) {
	for _, rtt := range []time.Duration{0, 10 * ms} {
		for range 100 {
			synctest.Test(t, func(t *testing.T) {
				a := modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 100 * ms})
				b := after("b", ms)
				g := MustNew(Config{Routes: []portico.Route{named("a", a), named("b", b)},
					Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: &modeltest.Budget{Tokens: -1, RTT: rtt}})})
				resp, err := g.Generate(context.Background(), idem)
				if err != nil || resp.Text != "b" || b.Count() != 1 {
					t.Fatalf("rtt %v: Generate = %v, %v, b called %d times; want b's answer, b called once", rtt, resp, err, b.Count())
				}
			})
		}
	}
}
