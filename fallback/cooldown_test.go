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
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

func limited(d time.Duration) *portico.Error {
	return &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: d}
}

// A route that announced a Retry-After cools down until then: skipped
// without a call (hop "cooldown") and called again once it ends.
func TestRetryAfterCoolsTheRouteDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: limited(5 * time.Second)}, &fake{name: "b"}
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		t0 := time.Now()
		resp, err := g.Generate(context.Background(), simple)
		if err != nil || resp.Route != "b" || !eq(hopsOf(t, resp.Hops), []string{"a:rate_limited:rate_limited"}) {
			t.Fatalf("Generate = %v, %v; want b's answer after a's 429", resp, err)
		}
		a.set(nil)
		for _, at := range []time.Duration{time.Second, 4999 * time.Millisecond} {
			time.Sleep(at - time.Since(t0))
			resp, err = g.Generate(context.Background(), simple)
			if err != nil || resp.Route != "b" || a.n() != 1 || !eq(hopsOf(t, resp.Hops), []string{"a:cooldown:nil"}) {
				t.Fatalf("at %v: Generate = %v, %v, a calls %d; want b's answer, a skipped in cooldown", at, resp, err, a.n())
			}
		}
		time.Sleep(time.Millisecond)
		if resp, err = g.Generate(context.Background(), simple); err != nil || resp.Route != "a" || a.n() != 2 {
			t.Errorf("at 5s: Generate = %v, %v, a calls %d; want a's answer on its second call", resp, err, a.n())
		}
	})
}

// Routes declaring one Quota cool down together; a route of another quota
// does not.
func TestSharedQuotaCoolsDownTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a1, a2, b := &fake{name: "a1", err: limited(3 * time.Second)}, &fake{name: "a2"}, &fake{name: "b"}
		acct := portico.Capabilities{Quota: "acct-1"}
		g := MustNew(Config{Routes: []portico.Route{route(a1, acct), route(a2, acct), route(b, portico.Capabilities{})}})
		resp, err := g.Generate(context.Background(), simple)
		if err != nil || resp.Route != "b" || a2.n() != 0 {
			t.Fatalf("Generate = %v, %v, a2 calls %d; want b's answer, a2 not called", resp, err, a2.n())
		}
		if got, want := hopsOf(t, resp.Hops), []string{"a1:rate_limited:rate_limited", "a2:cooldown:nil"}; !eq(got, want) {
			t.Errorf("Hops = %v, want %v", got, want)
		}
		time.Sleep(3 * time.Second)
		a1.set(perr(portico.Transient)) // no Retry-After: no cooldown
		if resp, err = g.Generate(context.Background(), simple); err != nil || resp.Route != "a2" || a1.n() != 2 || a2.n() != 1 {
			t.Errorf("at 3s: Generate = %v, %v, calls a1 %d a2 %d; want a1 tried again, then a2's answer", resp, err, a1.n(), a2.n())
		}
	})
}

// Only a Retry-After the route announced cools it down: not a local
// limiter's refusal (NotSent), not an open breaker's time to its probe
// (Rejected), not a hint on a client error.
func TestCooldownOnlyFromTheRoute(t *testing.T) {
	for _, err := range []*portico.Error{
		{Class: portico.RateLimited, RetryAfter: time.Second, NotSent: true},
		{Class: portico.Rejected, RetryAfter: time.Second, Err: breaker.ErrOpen},
		{Class: portico.Permanent, Status: 400, RetryAfter: time.Second},
	} {
		store, _ := NewMemoryCooldowns(0)
		a, b := &fake{name: "a", err: err}, &fake{name: "b"}
		g := MustNew(Config{Cooldowns: store, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		g.Generate(context.Background(), simple)
		if !store.Until("a").IsZero() || store.Len() != 0 {
			t.Errorf("after %v: cooldown of a until %v, want none", err, store.Until("a"))
		}
	}
	// A transient failure with the header (a 503 Retry-After) does.
	store, _ := NewMemoryCooldowns(0)
	a := &fake{name: "a", err: &portico.Error{Class: portico.Transient, Status: 503, RetryAfter: time.Minute}}
	g := MustNew(Config{Cooldowns: store, Routes: []portico.Route{route(a, portico.Capabilities{}), route(&fake{name: "b"}, portico.Capabilities{})}})
	g.Generate(context.Background(), simple)
	if d := time.Until(store.Until("a")); d <= 59*time.Second || d > time.Minute {
		t.Errorf("after a 503 with retry-after 1m: cooldown left %v, want 1m", d)
	}
}

// With every route cooling down or open, no route is called and the error
// says when the first comes back: RateLimited (a cooldown is among them),
// RetryAfter the least of the cooldowns and the breakers' open intervals,
// NotSent.
func TestEveryRouteCoolingOrOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, c := &fake{name: "a", err: limited(5 * time.Second)}, &fake{name: "b", err: limited(9 * time.Second)}, &fake{name: "c", err: perr(portico.Unusable)}
		br := breaker.MustNew(breaker.Config{Name: "c", OpenFor: 4 * time.Second})
		rc := route(c, portico.Capabilities{})
		rc.Model, rc.Health = br.Wrap(c), br
		g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{}), rc}})
		_, err := g.Generate(context.Background(), simple)
		if portico.ClassOf(err) != portico.RateLimited || portico.RetryAfterOf(err) != 5*time.Second {
			t.Fatalf("first Generate = %v; want rate_limited, retry-after 5s (a's, the least announced)", err)
		}
		time.Sleep(time.Second)
		_, err = g.Generate(context.Background(), simple)
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.RateLimited || pe.RetryAfter != 3*time.Second || !pe.NotSent {
			t.Fatalf("at 1s: Generate = %v; want rate_limited, retry-after 3s (c's breaker), NotSent", err)
		}
		var ex *Exhausted
		if !errors.As(err, &ex) || !eq(hopsOf(t, ex.Hops), []string{"a:cooldown:nil", "b:cooldown:nil", "c:unavailable:nil"}) {
			t.Errorf("hops = %v, want a and b cooling, c unavailable", ex)
		}
		if a.n()+b.n()+c.n() != 3 {
			t.Errorf("calls %d %d %d, want one each (the first request only)", a.n(), b.n(), c.n())
		}
		time.Sleep(3 * time.Second) // t=4s: c's probe is due, a cools 1s more
		c.set(nil)
		if resp, err := g.Generate(context.Background(), simple); err != nil || resp.Route != "c" {
			t.Errorf("at 4s: Generate = %v, %v; want c's answer (its probe)", resp, err)
		}
	})
}

// Under a deadline, a candidate that another could follow gets the group's
// WaitInPlace as its context's MaxWait; the last candidate gets none, nor
// does any candidate without a deadline (the group derives no context) or
// with a negative WaitInPlace.
func TestWaitInPlaceReachesTheRoutes(t *testing.T) {
	type seen struct {
		d  time.Duration
		ok bool
	}
	record := func(name string, out *[]seen, mu *sync.Mutex) portico.Route {
		return portico.Route{Name: name, Model: portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			d, ok := portico.MaxWaitFromContext(ctx)
			mu.Lock()
			*out = append(*out, seen{d, ok})
			mu.Unlock()
			return nil, perr(portico.Transient)
		})}
	}
	for _, tc := range []struct {
		name     string
		wait     time.Duration
		deadline bool
		want     []seen
	}{
		{"default", 0, true, []seen{{500 * time.Millisecond, true}, {500 * time.Millisecond, true}, {0, false}}},
		{"own", 2 * time.Second, true, []seen{{2 * time.Second, true}, {2 * time.Second, true}, {0, false}}},
		{"none", -1, true, []seen{{0, false}, {0, false}, {0, false}}},
		{"no deadline", 0, false, []seen{{0, false}, {0, false}, {0, false}}},
	} {
		var got []seen
		var mu sync.Mutex
		g := MustNew(Config{WaitInPlace: tc.wait, Routes: []portico.Route{record("a", &got, &mu), record("b", &got, &mu), record("c", &got, &mu)}})
		ctx := context.Background()
		if tc.deadline {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Minute)
			defer cancel()
		}
		g.Generate(ctx, simple)
		if len(got) != 3 || got[0] != tc.want[0] || got[1] != tc.want[1] || got[2] != tc.want[2] {
			t.Errorf("%s: MaxWait seen by a, b, c = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A hedged group cools a rate-limited route down as the walk does.
func TestHedgedGroupCoolsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", err: limited(5 * time.Second)}, &fake{name: "b"}
		g := MustNew(Config{Hedge: hedge.MustNew(hedge.Config{Delay: time.Second}), Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		for _, want := range []string{"a:rate_limited:rate_limited", "a:cooldown:nil"} {
			resp, err := g.Generate(context.Background(), simple)
			if err != nil || resp.Route != "b" || !eq(hopsOf(t, resp.Hops), []string{want}) || a.n() != 1 {
				t.Errorf("Generate = %v, %v (a calls %d); want b's answer after %s", resp, err, a.n(), want)
			}
		}
	})
}

// degradable is a SharedCooldowns over a MemoryCooldowns whose shared store
// is out of reach while down is set.
type degradable struct {
	*MemoryCooldowns
	down bool
}

func (d *degradable) Degraded() bool { return d.down }

// A group over a SharedCooldowns that lost its shared store reports each
// request as one EventSharedStore ("fallback:fail_open") and still honours
// the cooldowns it holds; a store in touch with its peers reports nothing.
func TestDegradedCooldownsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := NewMemoryCooldowns(0)
		store := &degradable{MemoryCooldowns: mem}
		a, b := &fake{name: "a", err: limited(5 * time.Second)}, &fake{name: "b"}
		g := MustNew(Config{Cooldowns: store, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		failOpen := portico.Event{Kind: portico.EventSharedStore, Class: portico.Transient, Reason: "fallback:fail_open"}
		for _, step := range []struct {
			down  bool
			hop   string
			wantN int // fail_open events of this request
		}{
			{false, "a:rate_limited:rate_limited", 0},
			{true, "a:cooldown:nil", 1},
			{true, "a:cooldown:nil", 1},
			{false, "a:cooldown:nil", 0},
		} {
			store.down = step.down
			obs := &events{}
			resp, err := g.Generate(portico.ContextWithObserver(context.Background(), obs), simple)
			if err != nil || resp.Route != "b" || a.n() != 1 || !eq(hopsOf(t, resp.Hops), []string{step.hop}) {
				t.Fatalf("degraded %v: Generate = %v, %v, a calls %d; want b's answer, hop %s", step.down, resp, err, a.n(), step.hop)
			}
			n := 0
			for _, e := range obs.ev {
				if e.Kind == portico.EventSharedStore {
					if e != failOpen {
						t.Errorf("degraded %v: event %+v, want %+v", step.down, e, failOpen)
					}
					n++
				}
			}
			if n != step.wantN {
				t.Errorf("degraded %v: %d shared-store events, want %d", step.down, n, step.wantN)
			}
		}
	})
}

// TestExhaustedRetryAfterIsFromNow: a answers 429 with Retry-After 1 s and is
// left at once; b takes 2 s and answers 429 with Retry-After 5 s. When the
// group gives up, a's cooldown ended a second ago, so a call could go now,
// yet the error's RetryAfter is a's hint as it was received, 1 s, which the
// caller reads as "wait 1 s from now". Hints and the waits of skipped routes
// are relative to when they were learnt; the error's should be relative to
// its return.
func TestExhaustedRetryAfterIsFromNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := modeltest.NewFake(modeltest.Fail(modeltest.RateLimitError(time.Second)))
		b := modeltest.NewFake(modeltest.Outcome{Latency: 2 * time.Second, Err: modeltest.RateLimitError(5 * time.Second)})
		g := MustNew(Config{Routes: []portico.Route{{Name: "a", Model: a}, {Name: "b", Model: b}}})
		_, err := g.Generate(context.Background(), simple)
		if portico.ClassOf(err) != portico.RateLimited {
			t.Fatalf("Generate = %v, want RateLimited", err)
		}
		if ra := portico.RetryAfterOf(err); ra >= time.Second {
			t.Errorf("RetryAfter = %v 2 s after a's 1 s hint, want less than 1s (a takes calls again now)", ra)
		}
	})
}

// A refusal after a sent call (portico.AfterSent: a retry refused by a
// limiter or a budget after an attempt went out) carries the refusing
// layer's wait, which is no announcement of the route's: the route is not
// cooled down for it, while a Retry-After the sent call carried still
// cools it.
func TestLocalWaitAfterSentDoesNotCool(t *testing.T) {
	refusal := &portico.Error{Class: portico.RateLimited, RetryAfter: 3 * time.Second, NotSent: true, RefusedBy: portico.RouteLimit}
	for _, tc := range []struct {
		name   string
		sent   *portico.Error
		cooled bool
	}{
		{"503 then refused", &portico.Error{Class: portico.Transient, Status: 503}, false},
		{"429 with Retry-After then refused", limited(2 * time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := &fake{name: "a", err: portico.AfterSent(refusal, tc.sent)}, &fake{name: "b"}
				g := MustNew(Config{Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
				if resp, err := g.Generate(context.Background(), simple); err != nil || resp.Route != "b" {
					t.Fatalf("Generate = %v, %v; want b's answer", resp, err)
				}
				a.set(nil)
				time.Sleep(time.Second)
				resp, err := g.Generate(context.Background(), simple)
				if err != nil {
					t.Fatal(err)
				}
				if got := resp.Route == "b"; got != tc.cooled {
					t.Errorf("at 1s: answered by %q, a calls %d; want a cooled down = %v", resp.Route, a.n(), tc.cooled)
				}
			})
		})
	}
}
