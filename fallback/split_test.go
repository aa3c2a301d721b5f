package fallback

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/rank"
)

func TestAllowance(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		remaining time.Duration
		last      bool
		want      time.Duration
		ok        bool
	}{
		{8 * time.Second, false, 4500 * ms, true}, // seed 003: 4.5 s of 8 s to the primary
		{3500 * ms, true, 3200 * ms, true},        // and 3.2 s to the fallback
		{8 * time.Second, true, 7700 * ms, true},  // a lone candidate: all but the reserve
		{500 * ms, false, 200 * ms, true},         // the share (281.25 ms) capped at the usable time
		{320 * ms, false, 20 * ms, false},         // share 180 ms too small, and 20 ms usable too
		{400 * ms, true, 100 * ms, true},          // exactly MinAttempt
		{399 * ms, true, 99 * ms, false},
		{200 * ms, true, -100 * ms, false},
	}
	for _, tc := range cases {
		got, ok := allowance(tc.remaining, DefaultReserve, DefaultMinAttempt, DefaultShare, tc.last)
		if got != tc.want || ok != tc.ok {
			t.Errorf("allowance(%v, last=%v) = %v, %v; want %v, %v", tc.remaining, tc.last, got, ok, tc.want, tc.ok)
		}
	}
	// A share below MinAttempt gives the candidate all the usable time.
	if got, ok := allowance(450*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond, 0.2, false); got != 150*time.Millisecond || !ok {
		t.Errorf("allowance(450ms, share 0.2) = %v, %v; want 150ms, true", got, ok)
	}
}

// TestSeed003DeadlineSplit reproduces seed 003's split of an 8 s deadline with
// the group's own code: the primary runs out its 4.5 s, the fallback gets
// 8 - 4.5 - 0.3 = 3.2 s.
func TestSeed003DeadlineSplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "primary", block: true}, &fake{name: "fallback"}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := g.Generate(ctx, simple)
		if err != nil || resp.Route != "fallback" {
			t.Fatalf("Generate = %v, %v; want the fallback's answer", resp, err)
		}
		if a.left != 4500*time.Millisecond || b.left != 3200*time.Millisecond {
			t.Errorf("allowances = %v, %v; want 4.5s, 3.2s", a.left, b.left)
		}
		if el := time.Since(start); el != 4500*time.Millisecond {
			t.Errorf("elapsed = %v, want 4.5s", el)
		}
		if got, want := hopsOf(t, resp.Hops), []string{"primary:timeout:ambiguous"}; !eq(got, want) {
			t.Errorf("Hops = %v, want %v", got, want)
		}
	})
}

func TestScaledReserve(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct{ remaining, want time.Duration }{
		{8 * time.Second, 300 * ms}, // seed 003: 8 s / 16 = 500 ms, capped at 300 ms
		{4800 * ms, 300 * ms},       // the shortest deadline that keeps the full 300 ms
		{4000 * ms, 250 * ms},       // below it, 1/16
		{500 * ms, 31250 * time.Microsecond},
		{0, 0},
		{-time.Second, 0}, // a deadline already past keeps nothing back
	} {
		if got := scaledReserve(tc.remaining, DefaultReserve); got != tc.want {
			t.Errorf("scaledReserve(%v, 300ms) = %v, want %v", tc.remaining, got, tc.want)
		}
	}
}

// TestShortDeadlineReachesFallback: with a 500 ms deadline and a primary that
// stalls, the default reserve (1/16: 31.25 ms) leaves the fallback time to
// answer. A fixed 300 ms reserve gave the primary 200 ms and the healthy
// fallback nothing: the call ended with Deadline at 200 ms, 300 ms unused.
func TestShortDeadlineReachesFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "primary", block: true}, &fake{name: "fallback"}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := g.Generate(ctx, simple)
		if err != nil || resp.Route != "fallback" || b.n() != 1 {
			t.Fatalf("Generate = %v, %v, fallback calls %d; want the fallback's answer", resp, err, b.n())
		}
		// primary: 9/16 of 500 ms; fallback: 500 - 281.25 - 31.25 ms.
		if a.left != 281250*time.Microsecond || b.left != 187500*time.Microsecond {
			t.Errorf("allowances = %v, %v; want 281.25ms, 187.5ms", a.left, b.left)
		}
		if el := time.Since(start); el != 281250*time.Microsecond {
			t.Errorf("elapsed = %v, want 281.25ms", el)
		}
	})
	// A positive Reserve is fixed: 300 ms of 500 leaves the fallback nothing.
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "primary", block: true}, &fake{name: "fallback"}
		g := MustNew(Config{Reserve: DefaultReserve, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := g.Generate(ctx, simple)
		// The primary's own timeout after the request was sent is Ambiguous:
		// a possibly billed call is never hidden behind Deadline.
		if portico.ClassOf(err) != portico.Ambiguous || b.n() != 0 || a.left != 200*time.Millisecond {
			t.Errorf("fixed reserve: err = %v, fallback calls %d, primary allowance %v; want Ambiguous, 0, 200ms", err, b.n(), a.left)
		}
	})
}

func TestLoneCandidateGetsAllButReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a"}, &fake{name: "b"}
		rb := route(b, portico.Capabilities{})
		rb.Health = down{}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), rb}})
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		if _, err := g.Generate(ctx, simple); err != nil {
			t.Fatal(err)
		}
		if a.left != 7700*time.Millisecond {
			t.Errorf("allowance = %v, want 7.7s (no fallback available to reserve for)", a.left)
		}
	})
}

// TestFirstCallTakesWhatIsLeft: with less than MinAttempt usable (100 ms
// less its reserve of 100/16 ms), the first route is called all the same,
// under the caller's own deadline, as it would be with no fallback; the
// fallback after its failure is not started (MinAttempt), and the request
// is out of time without calling it. With the deadline passed, nothing is
// called.
func TestFirstCallTakesWhatIsLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a"}, &fake{name: "b"}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		resp, err := g.Generate(ctx, simple)
		if err != nil || resp.Route != "a" || a.left != 100*time.Millisecond {
			t.Fatalf("Generate = %v, %v, a's allowance %v; want a's answer under the caller's 100 ms", resp, err, a.left)
		}
		a.err = perr(portico.Transient)
		ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel2()
		_, err = g.Generate(ctx2, simple)
		if portico.ClassOf(err) != portico.Deadline || !errors.Is(err, ErrExhausted) || b.n() != 0 {
			t.Errorf("after a's failure: err = %v, b calls %d; want an exhausted Deadline error, b not started", err, b.n())
		}
		ctx3, cancel3 := context.WithTimeout(context.Background(), 0)
		defer cancel3()
		calls := a.n()
		if _, err := g.Generate(ctx3, simple); portico.ClassOf(err) != portico.Deadline || a.n() != calls {
			t.Errorf("deadline passed: err = %v, a called %d more times; want Deadline, no call", err, a.n()-calls)
		}
	})
}

func TestTimeRunsOutAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, c := &fake{name: "a", block: true}, &fake{name: "b", block: true}, &fake{name: "c"}
		g := MustNew(Config{Reserve: 300 * time.Millisecond, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{}), route(c, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// With a fixed 300 ms reserve, a: 562.5 ms; b: 437.5*9/16 = 246.09 ms capped at 437.5-300 = 137.5 ms;
		// c: 300 - 300 = 0 left.
		_, err := g.Generate(ctx, simple)
		var ex *Exhausted
		if portico.ClassOf(err) != portico.Ambiguous || !errors.As(err, &ex) {
			t.Fatalf("err = %v, want an exhausted Ambiguous error (a and b ran out their shares after sending)", err)
		}
		if got, want := hopsOf(t, ex.Hops), []string{"a:timeout:ambiguous", "b:timeout:ambiguous", "c:deadline:nil"}; !eq(got, want) {
			t.Errorf("Hops = %v, want %v", got, want)
		}
		if a.left != 562500*time.Microsecond || b.left != 137500*time.Microsecond || c.n() != 0 {
			t.Errorf("allowances %v, %v, c calls %d; want 562.5ms, 137.5ms, 0", a.left, b.left, c.n())
		}
	})
}

func TestContractDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fake{name: "a"}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{})}})
		req := simple.Clone()
		req.Contract = &portico.Contract{Deadline: 2 * time.Second}
		if _, err := g.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if a.left != 1875*time.Millisecond {
			t.Errorf("allowance = %v, want 1.875s (2 s contract deadline less its 1/16, 125 ms)", a.left)
		}
	})
}

func TestIndependence(t *testing.T) {
	for _, tc := range []struct {
		ind   Independence
		route string
		hops  []string
	}{
		{AnyRoute, "same-provider", []string{"primary:unavailable:nil"}},
		{OtherProvider, "other-provider", []string{"primary:unavailable:nil", "same-provider:not independent:nil"}},
		{OtherRegion, "same-provider", []string{"primary:unavailable:nil"}},
	} {
		t.Run(tc.ind.String(), func(t *testing.T) {
			p := route(&fake{name: "primary"}, portico.Capabilities{Provider: "openai", Region: "us"})
			p.Health = down{}
			g := MustNew(Config{Independence: tc.ind, Routes: []portico.Route{
				p,
				route(&fake{name: "same-provider"}, portico.Capabilities{Provider: "openai", Region: "eu"}),
				route(&fake{name: "other-provider"}, portico.Capabilities{Provider: "azure", Region: "us"}),
			}})
			resp, err := g.Generate(context.Background(), simple)
			if err != nil || resp.Route != tc.route || !eq(hopsOf(t, resp.Hops), tc.hops) {
				t.Errorf("Generate = %v (%v); want %s with hops %v", resp, err, tc.route, tc.hops)
			}
		})
	}
	// Same provider and region: OtherRegion skips it too.
	p := route(&fake{name: "primary"}, portico.Capabilities{Provider: "openai", Region: "us"})
	p.Health = down{}
	g := MustNew(Config{Independence: OtherRegion, Routes: []portico.Route{p,
		route(&fake{name: "twin"}, portico.Capabilities{Provider: "openai", Region: "us"}),
		route(&fake{name: "unknown"}, portico.Capabilities{}),
	}})
	resp, err := g.Generate(context.Background(), simple)
	if err != nil || resp.Route != "unknown" {
		t.Errorf("Generate = %v, %v; want unknown (an empty provider excludes nothing)", resp, err)
	}
}

func TestCostBudget(t *testing.T) {
	// Input of simple is 4+2 = 6 tokens; MaxOutputTokens 100.
	a := &fake{name: "a", err: perr(portico.InvalidResponse)}
	b, c := &fake{name: "b"}, &fake{name: "c"}
	price := func(p float64) portico.Capabilities { return portico.Capabilities{InputPrice: p, OutputPrice: p} }
	g := MustNew(Config{Routes: []portico.Route{route(a, price(0.01)), route(b, price(0.01)), route(c, price(0.001))}})
	req := simple.Clone()
	req.MaxOutputTokens = 100
	req.Contract = &portico.Contract{MaxCost: 1.5} // a and b fit alone (1.06), not both
	resp, err := g.Generate(context.Background(), req)
	if err != nil || resp.Route != "c" {
		t.Fatalf("Generate = %v, %v; want c", resp, err)
	}
	if got, want := hopsOf(t, resp.Hops), []string{"a:invalid_response:invalid_response", "b:cost budget:nil"}; !eq(got, want) {
		t.Errorf("Hops = %v, want %v", got, want)
	}
}

func TestModelNames(t *testing.T) {
	a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
	g := MustNew(Config{
		Routes: []portico.Route{route(a, portico.Capabilities{}), {Name: "b", Model: b, ModelName: "model-b"}},
	})
	req := simple.Clone()
	req.Model = "model-a"
	if _, err := g.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if a.last.Model != "model-a" || b.last.Model != "model-b" || req.Model != "model-a" {
		t.Errorf("models sent = %q, %q, caller's = %q; want model-a, model-b, model-a", a.last.Model, b.last.Model, req.Model)
	}
}

func TestPolicy(t *testing.T) {
	price := func(p float64) portico.Capabilities { return portico.Capabilities{InputPrice: p} }
	a, b, c := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b", err: perr(portico.Transient)}, &fake{name: "c"}
	g := MustNew(Config{Policy: rank.ByCost, Routes: []portico.Route{route(a, price(3)), route(b, price(1)), route(c, price(2))}})
	resp, err := g.Generate(context.Background(), simple)
	if err != nil || resp.Route != "c" || !eq(hopsOf(t, resp.Hops), []string{"b:transient:transient"}) || a.n() != 0 {
		t.Errorf("Generate = %v (%v), a calls %d; want c after b, a untried", resp, err, a.n())
	}
}

type events struct {
	mu sync.Mutex
	ev []portico.Event
}

func (e *events) Observe(ctx context.Context, ev portico.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
}

func TestObserveFallback(t *testing.T) {
	obs := &events{}
	ctx := portico.ContextWithObserver(context.Background(), obs)
	a, b := &fake{name: "a", err: perr(portico.RateLimited)}, &fake{name: "b"}
	rb := route(b, portico.Capabilities{})
	rb.Health = down{}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), rb, route(&fake{name: "c"}, portico.Capabilities{})}})
	if _, err := g.Generate(ctx, simple); err != nil {
		t.Fatal(err)
	}
	want := []portico.Event{
		{Kind: portico.EventFallback, Route: "a", Class: portico.RateLimited, Reason: "rate_limited"},
		{Kind: portico.EventFallback, Route: "b", Class: portico.Rejected, Reason: "unavailable"},
	}
	if len(obs.ev) != 2 || obs.ev[0] != want[0] || obs.ev[1] != want[1] {
		t.Errorf("events = %+v, want %+v", obs.ev, want)
	}
}

// TestFirstRouteSuccessAllocs: without a deadline, a first-route success
// costs the candidate's context that carries the route's cooldown (under
// one, see TestHedgeRacedAllocs).
func TestFirstRouteSuccessAllocs(t *testing.T) {
	ok := &portico.Response{Text: "ok"}
	m := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) { return ok, nil })
	g := MustNew(Config{Routes: []portico.Route{{Name: "a", Model: m}, {Name: "b", Model: m}}})
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { g.Generate(ctx, simple) }); n != 1 {
		t.Errorf("allocs per first-route success = %v, want 1", n)
	}
}

func TestConcurrentGroup(t *testing.T) {
	a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			resp, err := g.Generate(context.Background(), simple)
			if err != nil || resp.Route != "b" || len(resp.Hops) != 1 {
				t.Errorf("Generate = %v, %v; want b after one hop", resp, err)
			}
		})
	}
	wg.Wait()
	if a.n() != 200 || b.n() != 200 {
		t.Errorf("calls = %d, %d; want 200, 200", a.n(), b.n())
	}
}

func TestEstimatorRunsOnceWhenNeeded(t *testing.T) {
	calls := 0
	est := portico.EstimatorFunc(func(req *portico.Request) int { calls++; return 100 })
	mk := func(window int) *Group {
		return MustNew(Config{Estimator: est, Routes: []portico.Route{
			route(&fake{name: "a", err: perr(portico.Transient)}, portico.Capabilities{ContextWindow: window}),
			route(&fake{name: "b", err: perr(portico.Transient)}, portico.Capabilities{ContextWindow: window}),
			route(&fake{name: "c"}, portico.Capabilities{ContextWindow: window}),
		}})
	}
	mk(0).Generate(context.Background(), simple)
	if calls != 0 {
		t.Errorf("estimator calls without windows = %d, want 0", calls)
	}
	mk(8192).Generate(context.Background(), simple)
	if calls != 1 {
		t.Errorf("estimator calls with windows over 3 routes = %d, want 1", calls)
	}
}
