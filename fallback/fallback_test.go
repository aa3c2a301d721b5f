package fallback

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/rank"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a scripted route Model: it returns err (or an answer naming the
// route when err is nil), counts its calls and remembers the last request and
// the time its context left it.
type fake struct {
	name string
	mu   sync.Mutex
	err  error
	// chunks are delivered through OnChunk before returning.
	chunks []string
	// block makes the call wait for its context to end, then fail with it.
	block bool
	calls int
	last  *portico.Request
	left  time.Duration // time until the call's deadline, when it had one
}

func (f *fake) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	f.mu.Lock()
	f.calls++
	f.last = req
	if dl, ok := ctx.Deadline(); ok {
		f.left = time.Until(dl)
	}
	err, chunks, block := f.err, f.chunks, f.block
	f.mu.Unlock()
	for _, c := range chunks {
		if req.OnChunk != nil {
			if e := req.OnChunk(portico.Chunk{Text: c}); e != nil {
				return nil, e
			}
		}
	}
	if block {
		<-ctx.Done()
		return nil, portico.FromContext(ctx)
	}
	if err != nil {
		return nil, err
	}
	return &portico.Response{Text: f.name, FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

func (f *fake) set(err error) { f.mu.Lock(); f.err = err; f.mu.Unlock() }
func (f *fake) n() int        { f.mu.Lock(); defer f.mu.Unlock(); return f.calls }

func route(f *fake, caps portico.Capabilities) portico.Route {
	return portico.Route{Name: f.name, Model: f, Capabilities: caps}
}

func perr(c portico.Class) *portico.Error { return &portico.Error{Class: c, Reason: "test"} }

// down is a Health that is never available, for a time it does not know.
type down struct{}

func (down) Available() bool           { return false }
func (down) RetryAfter() time.Duration { return 0 }

func hopsOf(t *testing.T, hops []portico.Hop) []string {
	t.Helper()
	var s []string
	for _, h := range hops {
		e := "nil"
		if h.Err != nil {
			e = portico.ClassOf(h.Err).String()
		}
		s = append(s, h.Route+":"+h.Reason+":"+e)
	}
	return s
}

func eq(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var simple = &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}}

func TestNewRejectsBadConfig(t *testing.T) {
	m := &fake{name: "a"}
	bad := []Config{
		{},
		{Routes: []portico.Route{{Model: m}}},
		{Routes: []portico.Route{{Name: "a"}}},
		{Routes: []portico.Route{{Name: "a", Model: m}, {Name: "a", Model: m}}},
		{Routes: []portico.Route{{Name: "a", Model: m}}, Share: 1.5},
		{Routes: []portico.Route{{Name: "a", Model: m}}, Independence: 9},
	}
	for i, c := range bad {
		if g, err := New(c); err == nil || g != nil {
			t.Errorf("New(bad[%d]) = %v, %v, want nil and an error", i, g, err)
		}
	}
}

func TestFirstRouteAnswers(t *testing.T) {
	a, b := &fake{name: "a"}, &fake{name: "b"}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{InputPrice: 1e-6, OutputPrice: 2e-6}), route(b, portico.Capabilities{})}})
	resp, err := g.Generate(context.Background(), simple)
	if err != nil {
		t.Fatalf("Generate = %v, want nil", err)
	}
	if resp.Route != "a" || resp.Hops != nil || b.n() != 0 {
		t.Errorf("Route = %q, Hops = %v, b calls = %d; want a, nil, 0", resp.Route, resp.Hops, b.n())
	}
	if want := (&portico.Capabilities{InputPrice: 1e-6, OutputPrice: 2e-6}).Cost(portico.Usage{InputTokens: 10, OutputTokens: 5}); resp.Cost != want || resp.Cost == 0 {
		t.Errorf("Cost = %v, want %v", resp.Cost, want)
	}
	if a.last != simple {
		t.Errorf("route got a copy of the request, want the caller's own (nothing to change)")
	}
}

func TestOpenBreakerSkippedWithoutWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
		br := breaker.MustNew(breaker.Config{Name: "a", Trip: breaker.ConsecutiveFailures(1), OpenFor: time.Minute})
		br.Wrap(a).Generate(context.Background(), simple) // trips
		ra := route(a, portico.Capabilities{})
		ra.Model, ra.Health = br.Wrap(a), br
		g := MustNew(Config{Routes: []portico.Route{ra, route(b, portico.Capabilities{})}})
		start := time.Now()
		resp, err := g.Generate(context.Background(), simple)
		if err != nil || resp.Route != "b" {
			t.Fatalf("Generate = %v, %v; want b's answer", resp, err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("took %v, want 0", d)
		}
		if got, want := hopsOf(t, resp.Hops), []string{"a:unavailable:nil"}; !eq(got, want) {
			t.Errorf("Hops = %v, want %v", got, want)
		}
		if a.n() != 1 {
			t.Errorf("a calls = %d, want 1 (only the tripping call)", a.n())
		}
	})
}

func TestOutageMovesTrafficAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
		br := breaker.MustNew(breaker.Config{Name: "a", Trip: breaker.ConsecutiveFailures(2), OpenFor: 10 * time.Second})
		ra := portico.Route{Name: "a", Model: br.Wrap(a), Health: br}
		g := MustNew(Config{Routes: []portico.Route{ra, route(b, portico.Capabilities{})}})
		steps := []struct {
			wait   time.Duration
			up     bool
			route  string
			hops   []string
			aCalls int
			state  breaker.State
		}{
			{0, false, "b", []string{"a:transient:transient"}, 1, breaker.Closed},
			{0, false, "b", []string{"a:transient:transient"}, 2, breaker.Open},
			{time.Second, false, "b", []string{"a:unavailable:nil"}, 2, breaker.Open},
			{9 * time.Second, true, "a", nil, 3, breaker.Closed}, // probe succeeds
			{0, true, "a", nil, 4, breaker.Closed},
		}
		for i, s := range steps {
			time.Sleep(s.wait)
			if s.up {
				a.set(nil)
			}
			resp, err := g.Generate(context.Background(), simple)
			if err != nil {
				t.Fatalf("step %d: Generate = %v", i, err)
			}
			if resp.Route != s.route || !eq(hopsOf(t, resp.Hops), s.hops) || a.n() != s.aCalls || br.State() != s.state {
				t.Errorf("step %d: Route %q Hops %v a calls %d state %v; want %q %v %d %v",
					i, resp.Route, hopsOf(t, resp.Hops), a.n(), br.State(), s.route, s.hops, s.aCalls, s.state)
			}
		}
	})
}

func TestRejectingFallbackPassesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limited := modeltest.RateLimitError(5 * time.Second)
		shed := &portico.Error{Class: portico.Rejected, Reason: "in-flight cap"}
		a, b, c, d := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b", err: limited}, &fake{name: "c", err: shed}, &fake{name: "d"}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{}), route(c, portico.Capabilities{}), route(d, portico.Capabilities{})}})
		start := time.Now()
		resp, err := g.Generate(context.Background(), simple)
		if err != nil || resp.Route != "d" {
			t.Fatalf("Generate = %v, %v; want d's answer", resp, err)
		}
		if el := time.Since(start); el != 0 {
			t.Errorf("took %v, want 0: a rejecting route must not be waited for", el)
		}
		want := []string{"a:transient:transient", "b:rate_limited:rate_limited", "c:rejected:rejected"}
		if got := hopsOf(t, resp.Hops); !eq(got, want) {
			t.Errorf("Hops = %v, want %v", got, want)
		}
		if resp.Hops[1].Err != limited {
			t.Errorf("Hops[1].Err = %v, want b's error", resp.Hops[1].Err)
		}
	})
}

func TestContextOverflowSkipsSameWindow(t *testing.T) {
	overflow := modeltest.ContextOverflowError() // as OpenAI reports it
	small1, small2, unknown, big := &fake{name: "small1", err: overflow}, &fake{name: "small2"}, &fake{name: "unknown-window", err: perr(portico.Transient)}, &fake{name: "big"}
	g := MustNew(Config{Routes: []portico.Route{
		route(small1, portico.Capabilities{ContextWindow: 8192}),
		route(small2, portico.Capabilities{ContextWindow: 8192}),
		route(unknown, portico.Capabilities{}),
		route(big, portico.Capabilities{ContextWindow: 128000}),
	}})
	req := &portico.Request{Messages: simple.Messages, MaxOutputTokens: 1000}
	resp, err := g.Generate(context.Background(), req)
	if err != nil || resp.Route != "big" {
		t.Fatalf("Generate = %v, %v; want big's answer", resp, err)
	}
	want := []string{"small1:context window:incompatible", "small2:context window:nil", "unknown-window:transient:transient"}
	if got := hopsOf(t, resp.Hops); !eq(got, want) {
		t.Errorf("Hops = %v, want %v", got, want)
	}
	if small2.n() != 0 {
		t.Errorf("small2 calls = %d, want 0", small2.n())
	}
}

// A route's error that forbids falling back stops the group, and is
// returned unchanged. (A context done before the group is entered calls no
// route at all: TestGone.)
func TestNoFallbackOn(t *testing.T) {
	noRepeat := simple.Clone()
	noRepeat.NoAmbiguousRetry = true
	for name, tc := range map[string]struct {
		ctx context.Context
		req *portico.Request
		err error
	}{
		"permanent":                  {context.Background(), simple, &portico.Error{Class: portico.Permanent, Status: 400}},
		"unclassified":               {context.Background(), simple, errors.New("mystery")},
		"canceled":                   {context.Background(), simple, perr(portico.Canceled)},
		"ambiguous-NoAmbiguousRetry": {context.Background(), noRepeat, perr(portico.Ambiguous)},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := &fake{name: "a", err: tc.err}, &fake{name: "b"}
			g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
			resp, err := g.Generate(tc.ctx, tc.req)
			if resp != nil || err != tc.err {
				t.Errorf("Generate = %v, %v; want nil, a's error unchanged", resp, err)
			}
			if b.n() != 0 {
				t.Errorf("b calls = %d, want 0", b.n())
			}
		})
	}
}

// By default an Ambiguous failure (sent, outcome unknown) moves the group on,
// as a retry layer would retry it.
func TestAmbiguousFallsBackByDefault(t *testing.T) {
	a, b := &fake{name: "a", err: perr(portico.Ambiguous)}, &fake{name: "b"}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
	resp, err := g.Generate(context.Background(), simple)
	if err != nil || resp.Route != "b" || a.n() != 1 {
		t.Fatalf("Generate = %v, %v after %d calls to a; want b's answer after 1", resp, err, a.n())
	}
	if got, want := hopsOf(t, resp.Hops), []string{"a:ambiguous:ambiguous"}; !eq(got, want) {
		t.Errorf("Hops = %v, want %v", got, want)
	}
}

func TestNoFallbackAfterFirstChunk(t *testing.T) {
	var got []string
	onChunk := func(c portico.Chunk) error { got = append(got, c.Text); return nil }
	req := simple.Clone()
	req.OnChunk = onChunk

	a, b := &fake{name: "a", err: perr(portico.Transient), chunks: []string{"par"}}, &fake{name: "b"}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
	_, err := g.Generate(context.Background(), req)
	if err != a.err || b.n() != 0 {
		t.Errorf("Generate err = %v, b calls = %d; want a's error and 0", err, b.n())
	}
	if len(got) != 1 || got[0] != "par" {
		t.Errorf("caller got chunks %q, want [par]", got)
	}

	// Before any chunk, the fallback is tried and streams to the caller.
	got = nil
	a2, b2 := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b", chunks: []string{"b"}}
	g = MustNew(Config{Routes: []portico.Route{route(a2, portico.Capabilities{}), route(b2, portico.Capabilities{})}})
	resp, err := g.Generate(context.Background(), req)
	if err != nil || resp.Route != "b" || len(got) != 1 || got[0] != "b" {
		t.Errorf("Generate = %v, %v, chunks %q; want b's answer and chunks [b]", resp, err, got)
	}
	if b2.last == req || b2.last.OnChunk == nil {
		t.Errorf("route got the caller's request; want a copy with a wrapped OnChunk")
	}
	if req.Model != "" || req.OnChunk == nil {
		t.Errorf("caller's request was modified")
	}

	// A fallback that breaks after its first chunk: the group stops there
	// and says why it did not go on.
	got = nil
	a3, b3 := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b", err: perr(portico.Transient), chunks: []string{"par"}}
	c3 := &fake{name: "c"}
	g = MustNew(Config{Routes: []portico.Route{route(a3, portico.Capabilities{}), route(b3, portico.Capabilities{}), route(c3, portico.Capabilities{})}})
	_, err = g.Generate(context.Background(), req)
	var ex *Exhausted
	if !errors.As(err, &ex) || !ex.Stopped || c3.n() != 0 || portico.ClassOf(err) != portico.Transient {
		t.Fatalf("Generate = %v, c calls %d; want b's Transient, stopped, c not called", err, c3.n())
	}
	if got, want := ex.Error(), "fallback: stopped at b (a chunk had reached the caller) after: a (transient)"; got != want {
		t.Errorf("Exhausted.Error() = %q, want %q", got, want)
	}
}

func TestAllFailListsEveryHop(t *testing.T) {
	ea := perr(portico.Transient)
	eb := &portico.Error{Class: portico.RateLimited, RetryAfter: 2 * time.Second}
	a, b, c := &fake{name: "a", err: ea}, &fake{name: "b", err: eb}, &fake{name: "c"}
	rc := route(c, portico.Capabilities{})
	rc.Health = down{}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{}), rc}})
	resp, err := g.Generate(context.Background(), simple)
	if resp != nil {
		t.Fatalf("resp = %v, want nil", resp)
	}
	if !errors.Is(err, ErrExhausted) || !errors.Is(err, ea) || !errors.Is(err, eb) {
		t.Fatalf("err = %v, want ErrExhausted wrapping a's and b's errors", err)
	}
	var ex *Exhausted
	if !errors.As(err, &ex) {
		t.Fatalf("errors.As(err, *Exhausted) = false")
	}
	if got, want := hopsOf(t, ex.Hops), []string{"a:transient:transient", "b:rate_limited:rate_limited", "c:unavailable:nil"}; !eq(got, want) {
		t.Errorf("Hops = %v, want %v", got, want)
	}
	if cl := portico.ClassOf(err); cl != portico.Transient {
		t.Errorf("ClassOf(err) = %v, want transient", cl)
	}
	if c.n() != 0 {
		t.Errorf("c calls = %d, want 0", c.n())
	}
}

func TestExhaustedClassRule(t *testing.T) {
	h := func(route, reason string, c portico.Class, ra time.Duration) portico.Hop {
		var err error
		if c != portico.OK {
			err = &portico.Error{Class: c, RetryAfter: ra}
		}
		return portico.Hop{Route: route, Reason: reason, Err: err}
	}
	cases := []struct {
		hops  []portico.Hop
		wait  time.Duration
		class portico.Class
		ra    time.Duration
	}{
		{[]portico.Hop{h("a", "context window", portico.OK, 0)}, 0, portico.Incompatible, 0},
		{[]portico.Hop{h("a", "context window", portico.OK, 0), h("b", reasonUnavailable, portico.OK, 0)}, 0, portico.Rejected, 0},
		{[]portico.Hop{h("a", "", portico.RateLimited, 3*time.Second), h("b", "", portico.Rejected, time.Second), h("c", reasonUnavailable, portico.OK, 0)}, time.Second, portico.RateLimited, time.Second},
		{[]portico.Hop{h("a", "", portico.RateLimited, 3*time.Second), h("b", "", portico.InvalidResponse, 0)}, 0, portico.InvalidResponse, 0},
		{[]portico.Hop{h("a", "", portico.InvalidResponse, 0), h("b", "", portico.Deadline, 0)}, 0, portico.Deadline, 0},
		{[]portico.Hop{h("a", "", portico.Deadline, 0), h("b", "", portico.Transient, 0)}, 0, portico.Transient, 0},
		{[]portico.Hop{h("a", "", portico.Ambiguous, 0), h("b", "", portico.Transient, 0)}, 0, portico.Ambiguous, 0},
		{[]portico.Hop{h("a", reasonDeadline, portico.OK, 0)}, 0, portico.Deadline, 0},
		// Unusable ranks above Incompatible only: a route that will come
		// back (Rejected, RateLimited) says more.
		{[]portico.Hop{h("a", "", portico.Unusable, 0), h("b", "context window", portico.OK, 0)}, 0, portico.Unusable, 0},
		{[]portico.Hop{h("a", "", portico.Unusable, 0), h("b", reasonUnavailable, portico.OK, 0)}, 4 * time.Second, portico.Rejected, 4 * time.Second},
		// Skipped routes: the least wait until one takes calls again.
		{[]portico.Hop{h("a", reasonCooldown, portico.OK, 0), h("b", reasonUnavailable, portico.OK, 0)}, 2 * time.Second, portico.RateLimited, 2 * time.Second},
		{[]portico.Hop{h("a", reasonCooldown, portico.OK, 0), h("b", "", portico.RateLimited, time.Second)}, time.Second, portico.RateLimited, time.Second},
		{[]portico.Hop{h("a", reasonCooldown, portico.OK, 0), h("b", "", portico.Transient, 0)}, 2 * time.Second, portico.Transient, 0},
	}
	for i, tc := range cases {
		err := exhausted(tc.hops, tc.wait)
		var pe *portico.Error
		errors.As(err, &pe)
		if pe.Class != tc.class || pe.RetryAfter != tc.ra {
			t.Errorf("case %d: exhausted = %v / %v, want %v / %v", i, pe.Class, pe.RetryAfter, tc.class, tc.ra)
		}
	}
}

// TestBreakerGroupUnderLoad runs 300 goroutines through a group whose primary,
// behind a real breaker, fails every other call: every request must end with
// an answer from one of the routes, and the answers add up.
func TestBreakerGroupUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		flaky := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			mu.Lock()
			n++
			odd := n%2 == 1
			mu.Unlock()
			time.Sleep(time.Millisecond)
			if odd {
				return nil, perr(portico.Transient)
			}
			return &portico.Response{Text: "a"}, nil
		})
		br := breaker.MustNew(breaker.Config{Name: "a", OpenFor: 5 * time.Millisecond, Probes: 2})
		b := &fake{name: "b"}
		g := MustNew(Config{Routes: []portico.Route{{Name: "a", Model: br.Wrap(flaky), Health: br}, route(b, portico.Capabilities{})}})
		var wg sync.WaitGroup
		var fromA, fromB sync.Map
		for i := range 300 {
			wg.Go(func() {
				for j := range 10 {
					resp, err := g.Generate(context.Background(), simple)
					if err != nil {
						t.Errorf("Generate = %v, want an answer (b never fails)", err)
						return
					}
					switch resp.Route {
					case "a":
						fromA.Store(i*10+j, true)
					case "b":
						fromB.Store(i*10+j, true)
					default:
						t.Errorf("Route = %q", resp.Route)
					}
					time.Sleep(time.Duration(j%3) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		count := func(m *sync.Map) (k int) { m.Range(func(_, _ any) bool { k++; return true }); return }
		a, bb := count(&fromA), count(&fromB)
		if a+bb != 3000 || bb != b.n() || a == 0 || bb == 0 {
			t.Errorf("answers a=%d b=%d (b calls %d), want 3000 in all, both routes used, b's answers = b's calls", a, bb, b.n())
		}
	})
}

func TestCanceledWhileAllFiltered(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ra := route(&fake{name: "a"}, portico.Capabilities{})
	ra.Health = down{}
	g := MustNew(Config{Routes: []portico.Route{ra}})
	_, err := g.Generate(ctx, simple)
	if c := portico.ClassOf(err); c != portico.Canceled {
		t.Errorf("ClassOf(Generate(canceled ctx)) = %v, want canceled", c)
	}
}

// TestStopErrorListsEarlierHops: when the group stops at an error that forbids
// falling back after leaving other routes, the error keeps that route's class
// and fields, and says why each earlier route was left.
func TestStopErrorListsEarlierHops(t *testing.T) {
	ea := perr(portico.Transient)
	eb := &portico.Error{Class: portico.Permanent, Status: 400, Code: "invalid_request", Model: "b"}
	a, b, c := &fake{name: "a", err: ea}, &fake{name: "b", err: eb}, &fake{name: "c"}
	rs := route(&fake{name: "skipped"}, portico.Capabilities{})
	rs.Health = down{}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), rs, route(b, portico.Capabilities{}), route(c, portico.Capabilities{})}})
	resp, err := g.Generate(context.Background(), simple)
	if resp != nil || c.n() != 0 {
		t.Fatalf("Generate = %v, c calls %d; want nil and 0", resp, c.n())
	}
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class != portico.Permanent || pe.Status != 400 || pe.Code != "invalid_request" || pe.Model != "b" {
		t.Fatalf("err = %v, want b's class, status, code and model", err)
	}
	if !errors.Is(err, eb) || !errors.Is(err, ea) || !errors.Is(err, portico.ErrPermanent) {
		t.Errorf("errors.Is(err, b's / a's / ErrPermanent) = false, want true")
	}
	if errors.Is(err, ErrExhausted) {
		t.Errorf("errors.Is(err, ErrExhausted) = true, want false: c was never tried")
	}
	var ex *Exhausted
	if !errors.As(err, &ex) || !ex.Stopped {
		t.Fatalf("errors.As(err, *Exhausted) = %v, want a Stopped one", ex)
	}
	if got, want := hopsOf(t, ex.Hops), []string{"a:transient:transient", "skipped:unavailable:nil", "b:permanent:permanent"}; !eq(got, want) {
		t.Errorf("Hops = %v, want %v", got, want)
	}
	if got, want := ex.Error(), "fallback: stopped at b after: a (transient), skipped (unavailable)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}

	// An unclassified error: the wrapper gets its class (Permanent).
	mystery := errors.New("mystery")
	a2, b2 := &fake{name: "a", err: ea}, &fake{name: "b", err: mystery}
	g = MustNew(Config{Routes: []portico.Route{route(a2, portico.Capabilities{}), route(b2, portico.Capabilities{})}})
	_, err = g.Generate(context.Background(), simple)
	if portico.ClassOf(err) != portico.Permanent || !errors.Is(err, mystery) || !errors.As(err, &ex) || len(ex.Hops) != 2 {
		t.Errorf("err = %v, want a permanent error wrapping mystery with 2 hops", err)
	}
}

// TestNilResponse: a route that returns neither an answer nor an error breaks
// the Model contract; the group treats it as an invalid response and falls
// back instead of returning (nil, nil) or panicking.
func TestNilResponse(t *testing.T) {
	null := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) { return nil, nil })
	b := &fake{name: "b"}
	g := MustNew(Config{Routes: []portico.Route{{Name: "a", Model: null}, route(b, portico.Capabilities{})}})
	resp, err := g.Generate(context.Background(), simple)
	if err != nil || resp.Route != "b" {
		t.Fatalf("Generate = %v, %v; want b's answer", resp, err)
	}
	if got, want := hopsOf(t, resp.Hops), []string{"a:invalid_response:invalid_response"}; !eq(got, want) {
		t.Errorf("Hops = %v, want %v", got, want)
	}
	if err := resp.Hops[0].Err; err != portico.ErrNilResponse {
		t.Errorf("hop error = %v, want the shared portico.ErrNilResponse", err)
	}
	g = MustNew(Config{Routes: []portico.Route{{Name: "a", Model: null}}})
	resp, err = g.Generate(context.Background(), simple)
	if resp != nil || portico.ClassOf(err) != portico.InvalidResponse || !errors.Is(err, ErrExhausted) || !errors.Is(err, portico.ErrNilResponse) {
		t.Errorf("Generate = %v, %v; want nil and an exhausted invalid_response error wrapping portico.ErrNilResponse", resp, err)
	}
}

// TestNilRequest: a nil *Request is refused with the shared
// portico.ErrNilRequest, no route called.
func TestNilRequest(t *testing.T) {
	a := &fake{name: "a"}
	g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{})}})
	resp, err := g.Generate(context.Background(), nil)
	if resp != nil || err != portico.ErrNilRequest {
		t.Errorf("Generate(nil) = %v, %v; want nil, portico.ErrNilRequest", resp, err)
	}
	if a.n() != 0 {
		t.Errorf("route calls = %d, want 0", a.n())
	}
	g = MustNew(Config{Policy: rank.ByCost, Routes: []portico.Route{route(a, portico.Capabilities{})}})
	if _, err := g.Generate(context.Background(), nil); err != portico.ErrNilRequest {
		t.Errorf("Generate(nil) with a Policy = %v, want portico.ErrNilRequest", err)
	}
}

// TestFilterReasons: each need of the request or contract that a route does
// not meet skips it, unasked, with the reason Fits names.
func TestFilterReasons(t *testing.T) {
	img := portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "https://x/y.png"}}}
	full := portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage, ContextWindow: 128000, MaxOutput: 16000, Tools: true, Schema: portico.SchemaStrict, ModelClass: "frontier", InputPrice: 1e-6, OutputPrice: 1e-6}
	with := func(f func(*portico.Capabilities)) portico.Capabilities { c := full; f(&c); return c }
	for _, tc := range []struct {
		reason string
		caps   portico.Capabilities
		req    portico.Request
	}{
		{"modality", with(func(c *portico.Capabilities) { c.Modalities = portico.ModalityText }), portico.Request{Messages: []portico.Message{img}}},
		{"modality", with(func(c *portico.Capabilities) { c.Modalities = 0 }), portico.Request{Messages: simple.Messages, Contract: &portico.Contract{Modalities: portico.ModalityImage}}},
		{"context window", with(func(c *portico.Capabilities) { c.ContextWindow = 1000 }), portico.Request{Messages: simple.Messages, MaxOutputTokens: 995}},
		{"context window", with(func(c *portico.Capabilities) { c.ContextWindow = 8000 }), portico.Request{Messages: simple.Messages, Contract: &portico.Contract{MaxInputTokens: 7500}, MaxOutputTokens: 501}},
		{"max output", with(func(c *portico.Capabilities) { c.MaxOutput = 4096 }), portico.Request{Messages: simple.Messages, MaxOutputTokens: 8000}},
		{"tools", with(func(c *portico.Capabilities) { c.Tools = false }), portico.Request{Messages: simple.Messages, Tools: []portico.Tool{{Name: "f"}}}},
		{"tools", with(func(c *portico.Capabilities) { c.Tools = false }), portico.Request{Messages: simple.Messages, Contract: &portico.Contract{ToolsRequired: true}}},
		{"schema", with(func(c *portico.Capabilities) { c.Schema = portico.SchemaJSONObject }), portico.Request{Messages: simple.Messages, Contract: &portico.Contract{SchemaID: "invoice"}}},
		{"strict schema", with(func(c *portico.Capabilities) { c.Schema = portico.SchemaJSON }), portico.Request{Messages: simple.Messages, Schema: &portico.Schema{Name: "s", Strict: true}}},
		{"model class", with(func(c *portico.Capabilities) { c.ModelClass = "small" }), portico.Request{Messages: simple.Messages, Contract: &portico.Contract{ModelClasses: []string{"frontier", "reasoning"}}}},
		{"cost", with(func(c *portico.Capabilities) { c.OutputPrice = 1e-3 }), portico.Request{Messages: simple.Messages, MaxOutputTokens: 1000, Contract: &portico.Contract{MaxCost: 0.5}}},
	} {
		a, b := &fake{name: "a"}, &fake{name: "b"}
		g := MustNew(Config{Routes: []portico.Route{route(a, tc.caps), route(b, full)}})
		resp, err := g.Generate(context.Background(), &tc.req)
		if err != nil || resp.Route != "b" || a.n() != 0 {
			t.Errorf("%s: Generate = %v, %v, a calls %d; want b's answer, a untried", tc.reason, resp, err, a.n())
			continue
		}
		if got, want := hopsOf(t, resp.Hops), []string{"a:" + tc.reason + ":nil"}; !eq(got, want) {
			t.Errorf("%s: Hops = %v, want %v", tc.reason, got, want)
		}
	}
}

// TestFilterAfterAFit: a route that Fits passed on, and failed, is followed
// by one whose Capabilities do not cover its own (portico.Capabilities.Covers)
// only through Fits: each need that route lacks skips it, untried; a route
// that covers them is tried.
func TestFilterAfterAFit(t *testing.T) {
	img := portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "https://x/y.png"}}}
	full := portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage, ContextWindow: 128000, MaxOutput: 16000, Tools: true, Schema: portico.SchemaStrict, ModelClass: "frontier"}
	with := func(f func(*portico.Capabilities)) portico.Capabilities { c := full; f(&c); return c }
	for _, tc := range []struct {
		reason string // "" for a route that covers the first
		caps   portico.Capabilities
		req    portico.Request
	}{
		{"modality", with(func(c *portico.Capabilities) { c.Modalities = portico.ModalityText }), portico.Request{Messages: []portico.Message{img}}},
		{"context window", with(func(c *portico.Capabilities) { c.ContextWindow = 1000 }), portico.Request{Messages: simple.Messages, MaxOutputTokens: 995}},
		{"max output", with(func(c *portico.Capabilities) { c.MaxOutput = 4096 }), portico.Request{Messages: simple.Messages, MaxOutputTokens: 8000}},
		{"tools", with(func(c *portico.Capabilities) { c.Tools = false }), portico.Request{Messages: simple.Messages, Tools: []portico.Tool{{Name: "f"}}}},
		{"strict schema", with(func(c *portico.Capabilities) { c.Schema = portico.SchemaJSON }), portico.Request{Messages: simple.Messages, Schema: &portico.Schema{Name: "s", Strict: true}}},
		{"model class", with(func(c *portico.Capabilities) { c.ModelClass = "small" }), portico.Request{Messages: simple.Messages, Contract: &portico.Contract{ModelClasses: []string{"frontier"}}}},
		{"", with(func(c *portico.Capabilities) { c.ContextWindow, c.Provider = 0, "other" }), portico.Request{Messages: []portico.Message{img}, MaxOutputTokens: 8000, Tools: []portico.Tool{{Name: "f"}}}},
	} {
		a, b := &fake{name: "a", err: perr(portico.Transient)}, &fake{name: "b"}
		g := MustNew(Config{Routes: []portico.Route{route(a, full), route(b, tc.caps)}})
		resp, err := g.Generate(context.Background(), &tc.req)
		if tc.reason == "" {
			if err != nil || resp.Route != "b" || a.n() != 1 {
				t.Errorf("covering route: Generate = %v, %v, a calls %d; want b's answer after a's failure", resp, err, a.n())
			}
			continue
		}
		var ex *Exhausted
		if !errors.As(err, &ex) || b.n() != 0 {
			t.Errorf("%s: Generate = %v, %v, b calls %d; want exhausted, b untried", tc.reason, resp, err, b.n())
			continue
		}
		if got, want := hopsOf(t, ex.Hops), []string{"a:transient:transient", "b:" + tc.reason + ":nil"}; !eq(got, want) {
			t.Errorf("%s: Hops = %v, want %v", tc.reason, got, want)
		}
	}
}

// TestNestedGroupsKeepInnerHops: a Group as a route of another keeps the hops
// it reports, after the outer group's own (as package route's layers do).
func TestNestedGroupsKeepInnerHops(t *testing.T) {
	rx := route(&fake{name: "x"}, portico.Capabilities{})
	rx.Health = down{}
	inner := MustNew(Config{Routes: []portico.Route{rx, route(&fake{name: "y"}, portico.Capabilities{})}})
	for _, tc := range []struct {
		aErr error
		hops []string
	}{
		{nil, []string{"x:unavailable:nil"}},
		{perr(portico.Transient), []string{"a:transient:transient", "x:unavailable:nil"}},
	} {
		a := &fake{name: "a", err: tc.aErr}
		ra := route(a, portico.Capabilities{})
		if tc.aErr == nil {
			ra = portico.Route{Name: "inner", Model: inner}
		}
		routes := []portico.Route{ra, {Name: "inner", Model: inner}}
		if tc.aErr == nil {
			routes = routes[:1]
		}
		outer := MustNew(Config{Routes: routes})
		resp, err := outer.Generate(context.Background(), simple)
		if err != nil || resp.Route != "inner" || resp.Text != "y" {
			t.Fatalf("Generate = %v, %v; want y's answer through route inner", resp, err)
		}
		if got := hopsOf(t, resp.Hops); !eq(got, tc.hops) {
			t.Errorf("Hops = %v, want %v", got, tc.hops)
		}
	}
}
