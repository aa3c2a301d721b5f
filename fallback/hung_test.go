package fallback

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
)

// TestHungPrimaryTripsBreaker: a primary that stalls runs out its share of
// each request's deadline; the group ends its context with ErrShareTimeout, a
// layer timeout, so the route reports Ambiguous and its breaker counts it.
// After ConsecutiveFailures (5) the breaker opens and the group skips the
// primary at once. With a plain share timeout the route saw the caller's
// Deadline, which breakers ignore: the dead primary was called on all 25
// requests and each paid 11.25 s of its 20 s. The share of 20 s is past
// Config.FaultAfter (10 s), a failure; with FaultAfter negative a share of
// 400 ms is one as well. Shares of 1 s and 10 s deadlines (562.5 ms,
// 5.625 s) are shorter: each cut is an unanswered one
// (portico.ErrUnanswered), which the breaker counts in its run of
// consecutive failures, so five in a row open it too. Before that rule
// such cuts were ignored and the hung primary was called on every request.
func TestHungPrimaryTripsBreaker(t *testing.T) {
	for _, c := range []struct {
		name       string
		deadline   time.Duration
		faultAfter time.Duration
		cut        bool // a share shorter than FaultAfter: an unanswered cut
	}{
		{"default", 20 * time.Second, 0, false},
		{"every cut counts", 400 * time.Millisecond, -1, false},
		{"1 s", time.Second, 0, true},
		{"10 s", 10 * time.Second, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				brk := breaker.MustNew(breaker.Config{Name: "primary", Trip: breaker.ConsecutiveFailures(5)})
				hung := modeltest.NewFake(modeltest.Outcome{Stall: true})
				healthy := modeltest.NewFake()
				g := MustNew(Config{FaultAfter: c.faultAfter, Routes: []portico.Route{
					{Name: "primary", Model: brk.Wrap(hung), Health: brk},
					{Name: "secondary", Model: healthy},
				}})
				const requests = 25
				noRepeat := simple.Clone()
				noRepeat.NoAmbiguousRetry = true // the share timeout moves on all the same
				for i := range requests {
					ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
					start := time.Now()
					resp, err := g.Generate(ctx, noRepeat)
					el := time.Since(start)
					cancel()
					if err != nil || resp.Route != "secondary" {
						t.Fatalf("request %d: Generate = %v, %v; want the secondary's answer", i, resp, err)
					}
					// 9/16 of the deadline while the primary is called, nothing once it is skipped.
					want, reason := c.deadline*9/16, "timeout"
					if i >= 5 {
						want, reason = 0, reasonUnavailable
					}
					if el != want || len(resp.Hops) != 1 || resp.Hops[0].Reason != reason {
						t.Fatalf("request %d: elapsed %v, hops %v; want %v, one %q hop", i, el, resp.Hops, want, reason)
					}
					if h := resp.Hops[0].Err; i < 5 && (!errors.Is(h, ErrShareTimeout) || errors.Is(h, portico.ErrDeadlineCut) != c.cut || errors.Is(h, portico.ErrUnanswered) != c.cut || portico.ClassOf(h) != portico.Ambiguous) {
						t.Fatalf("request %d: hop error %v; want an Ambiguous error caused by ErrShareTimeout, an unanswered cut %v", i, h, c.cut)
					}
				}
				if n := hung.Count(); n != 5 {
					t.Errorf("primary calls = %d, want 5 (then skipped while its breaker is open)", n)
				}
				if n := healthy.Count(); n != requests {
					t.Errorf("secondary calls = %d, want %d", n, requests)
				}
				if s := brk.State(); s != breaker.Open {
					t.Errorf("breaker state = %v, want open", s)
				}
			})
		})
	}
}

// TestShortShareNotAFault: a healthy primary that answers in 400 ms, and
// callers whose 400 ms deadlines give it a 225 ms share, shorter than
// FaultAfter, among patient callers it answers (one in four). Each cut
// moves the request on (Ambiguous, ErrShareTimeout) and is an unanswered
// cut (portico.ErrUnanswered, portico.ErrDeadlineCut): the breaker counts
// it in its run of consecutive failures only, which each answer ends, so
// through 40 requests it counts no failure, stays closed, and a patient
// caller gets its answer. (A route that answers none of five in a row is
// taken for hung: TestHungPrimaryTripsBreaker.)
func TestShortShareNotAFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		brk := breaker.MustNew(breaker.Config{Name: "primary", Trip: breaker.ConsecutiveFailures(5)})
		slow := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "slow", FinishReason: portico.FinishStop}, Latency: 400 * time.Millisecond})
		g := MustNew(Config{Routes: []portico.Route{
			{Name: "primary", Model: brk.Wrap(slow), Health: brk},
			{Name: "secondary", Model: modeltest.NewFake()},
		}})
		for i := range 40 {
			if i%4 == 3 {
				if resp, err := g.Generate(context.Background(), simple); err != nil || resp.Route != "primary" {
					t.Fatalf("patient request %d = %+v, %v; want the primary's answer", i, resp, err)
				}
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			resp, err := g.Generate(ctx, simple)
			cancel()
			if err != nil || resp.Route != "secondary" || len(resp.Hops) != 1 {
				t.Fatalf("request %d: Generate = %+v, %v; want the secondary's answer after one hop", i, resp, err)
			}
			if h := resp.Hops[0].Err; !errors.Is(h, ErrShareTimeout) || !errors.Is(h, portico.ErrDeadlineCut) || !errors.Is(h, portico.ErrUnanswered) || portico.ClassOf(h) != portico.Ambiguous {
				t.Fatalf("request %d: hop error %v; want Ambiguous, ErrShareTimeout, ErrDeadlineCut and ErrUnanswered", i, h)
			}
		}
		if st := brk.State(); st != breaker.Closed {
			t.Errorf("primary breaker after 30 short shares among 10 answers = %v, want closed", st)
		}
		resp, err := g.Generate(context.Background(), simple)
		if err != nil || resp.Route != "primary" || resp.Text != "slow" {
			t.Errorf("patient request = %+v, %v; want the primary's answer", resp, err)
		}
	})
}

// TestCallerDeadlineStopsEverything: when the caller's own deadline ends
// during a candidate (no reserve, the last candidate given all the time), the
// group does not move on and reports Deadline, not the share's Ambiguous.
func TestCallerDeadlineStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", block: true}, &fake{name: "b", block: true}
		g := MustNew(Config{Reserve: -1, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := g.Generate(ctx, simple)
		if el := time.Since(start); el != 800*time.Millisecond {
			t.Errorf("elapsed = %v, want 800ms", el)
		}
		var ex *Exhausted
		if portico.ClassOf(err) != portico.Ambiguous || !errors.As(err, &ex) {
			t.Fatalf("err = %v, want an exhausted error", err)
		}
		// a ran out its share (Ambiguous: possibly billed, never hidden); b was
		// stopped by the caller's deadline.
		if got, want := hopsOf(t, ex.Hops), []string{"a:timeout:ambiguous", "b:deadline:deadline"}; !eq(got, want) {
			t.Errorf("Hops = %v, want %v", got, want)
		}
	})
	// Share 1 gives the first candidate all the time: the caller's deadline
	// ends during it and the group stops there, without trying b.
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{name: "a", block: true}, &fake{name: "b"}
		g := MustNew(Config{Share: 1, Reserve: -1, Routes: []portico.Route{route(a, portico.Capabilities{}), route(b, portico.Capabilities{})}})
		ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
		defer cancel()
		_, err := g.Generate(ctx, simple)
		if portico.ClassOf(err) != portico.Deadline || b.n() != 0 {
			t.Errorf("Generate = %v, fallback calls %d; want Deadline, 0", err, b.n())
		}
	})
}
