package stack

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// sleeper answers after d, whatever its context says: a call that holds
// what it was admitted with (a slot) for d.
func sleeper(d time.Duration) portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		time.Sleep(d)
		return &portico.Response{Text: "late", FinishReason: portico.FinishStop}, nil
	})
}

// TestDeadlineEndsClientQueueWait: the stack's deadline reaches its group
// without a context of its own, and the client limiter's queue still ends
// at it. One call holds the client's one slot for 10 s; a second, under
// the stack's 2 s Deadline, queues for it and fails at 2 s exactly, of
// class Deadline and NotSent, no route called.
func TestDeadlineEndsClientQueueWait(t *testing.T) {
	for _, routes := range []int{1, 2} {
		synctest.Test(t, func(t *testing.T) {
			rs := []Route{route("a", sleeper(10*time.Second)), route("b", sleeper(10*time.Second))}[:routes]
			client := &ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: 1}, Queue: ratelimit.Queue{Size: 10}}
			s, err := New(Config{Routes: rs, Client: client, Deadline: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Go(func() { s.Generate(context.Background(), hello) })
			synctest.Wait() // the one slot is taken
			start := time.Now()
			_, err = s.Generate(context.Background(), hello)
			if took := time.Since(start); portico.ClassOf(err) != portico.Deadline || !portico.NothingSent(err) || took != 2*time.Second {
				t.Errorf("%d routes: queued call = %v (NotSent %v) after %v; want Deadline, NotSent, after 2s", routes, err, portico.NothingSent(err), took)
			}
			wg.Wait()
		})
	}
}

// TestDeadlineEndsHungRoutes: under the stack's 16 s Deadline, carried to
// the group as a value, two routes that never answer are cut as under a
// deadline context: the primary at its share (9 s), the secondary at the
// reserve kept back before the deadline (15.7 s; Ambiguous, both cut by
// the group) or, with no reserve, at the deadline itself (Deadline, the
// caller's time out); one route alone is cut at the deadline.
func TestDeadlineEndsHungRoutes(t *testing.T) {
	hung := func() portico.Model { return modeltest.NewFake(modeltest.Outcome{Stall: true}) }
	for _, c := range []struct {
		reserve time.Duration
		class   portico.Class
		took    time.Duration
		hops    []string
	}{
		{0, portico.Ambiguous, 15700 * time.Millisecond, []string{"a:timeout", "b:timeout"}},
		{-1, portico.Ambiguous, 16 * time.Second, []string{"a:timeout", "b:deadline"}},
	} {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(Config{Routes: []Route{route("a", hung()), route("b", hung())}, Deadline: 16 * time.Second,
				Fallback: fallback.Config{Reserve: c.reserve}})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = s.Generate(context.Background(), hello)
			var ex *fallback.Exhausted
			if took := time.Since(start); portico.ClassOf(err) != c.class || took != c.took || !errors.As(err, &ex) {
				t.Fatalf("reserve %v: Generate = %v after %v; want %v, Exhausted, after %v", c.reserve, err, took, c.class, c.took)
			}
			var got []string
			for _, h := range ex.Hops {
				got = append(got, h.Route+":"+h.Reason)
			}
			if !equal(got, c.hops) {
				t.Errorf("reserve %v: hops = %v, want %v", c.reserve, got, c.hops)
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		one, err := New(Config{Routes: []Route{route("a", hung())}, Deadline: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = one.Generate(context.Background(), hello)
		if took := time.Since(start); portico.ClassOf(err) != portico.Deadline || took != 5*time.Second {
			t.Errorf("one route: Generate = %v after %v; want Deadline after 5s", err, took)
		}
	})
}

func equal(a, b []string) bool {
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

// TestClientWaitPastDeadlineRefused: the client limiter, in Wait mode,
// refuses at once a wait that cannot end before the stack's deadline,
// carried to the group as a value: a second call within the 10 s period,
// under a 5 s Deadline, is RateLimited at once, with the wait to its
// token as RetryAfter, no route called.
func TestClientWaitPastDeadlineRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake(modeltest.Answer("fine"))
		s, err := New(Config{Routes: []Route{route("a", f), route("b", f)}, Deadline: 5 * time.Second,
			Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: 10 * time.Second}, Mode: ratelimit.Wait}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Generate(context.Background(), hello); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = s.Generate(context.Background(), hello)
		if took := time.Since(start); portico.ClassOf(err) != portico.RateLimited || portico.RetryAfterOf(err) != 10*time.Second || took != 0 || f.Count() != 1 {
			t.Errorf("second call = %v (RetryAfter %v) after %v, %d route calls; want RateLimited, 10s, at once, 1", err, portico.RetryAfterOf(err), took, f.Count())
		}
	})
}
