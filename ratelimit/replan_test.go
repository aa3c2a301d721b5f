package ratelimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestWaitReplan: in Wait mode, when a place in line is given back (a
// canceled wait) or SetLimit changes the limits, the waiters of that key
// plan their wait again, so the place given back is taken by the next in
// line at once rather than left empty. (Waiters slept on a timer fixed at
// arrival: with c1 canceled, c2 still slept until 2s and c3 got 3s.)
func TestWaitReplan(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// 1 request per second, burst 1.
			l := mustNew(t, Config{Limits: Limits{Requests: 1, RequestBurst: 1, Period: time.Second}, Mode: Wait})
			m := l.Wrap(okModel(1, 1))
			start := time.Now()
			if _, err := m.Generate(t.Context(), req("a", 1)); err != nil { // c0 takes the token
				t.Fatal(err)
			}
			type result struct {
				name string
				at   time.Duration
				err  error
			}
			results := make(chan result, 3)
			call := func(ctx context.Context, name string) {
				_, err := m.Generate(ctx, req("a", 1))
				results <- result{name, time.Since(start), err}
			}
			ctx1, cancel1 := context.WithCancel(t.Context())
			defer cancel1()
			go call(ctx1, "c1") // due at 1s
			time.Sleep(20 * time.Millisecond)
			go call(t.Context(), "c2") // due at 2s, behind c1
			time.Sleep(100 * time.Millisecond)
			cancel1() // at 120ms: c1's place at 1s is free
			time.Sleep(100 * time.Millisecond)
			go call(t.Context(), "c3") // at 220ms: behind c2 only
			want := map[string]struct {
				at    time.Duration
				class portico.Class
			}{
				"c1": {120 * time.Millisecond, portico.Canceled},
				"c2": {time.Second, portico.OK},
				"c3": {2 * time.Second, portico.OK},
			}
			for range 3 {
				r := <-results
				if w := want[r.name]; r.at != w.at || portico.ClassOf(r.err) != w.class {
					t.Errorf("%s ended at %v with %v, want at %v with class %v", r.name, r.at, r.err, w.at, w.class)
				}
			}
			if n := l.inflightOf(req("a", 1)); n != 0 {
				t.Errorf("in flight after the calls = %d, want 0", n)
			}
		})
	})
	t.Run("SetLimit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, Config{Limits: Limits{Requests: 1, RequestBurst: 1, Period: time.Second}, Mode: Wait})
			m := l.Wrap(okModel(1, 1))
			start := time.Now()
			m.Generate(t.Context(), req("a", 1))
			done := make(chan time.Duration)
			go func() {
				if _, err := m.Generate(t.Context(), req("a", 1)); err != nil {
					t.Errorf("waiting call = %v, want admitted", err)
				}
				done <- time.Since(start)
			}()
			time.Sleep(100 * time.Millisecond)
			// 0.1 request refilled at 1/s; the 0.9 missing take 90ms at 10/s.
			if err := l.SetLimit(Limits{Requests: 10, RequestBurst: 1, Period: time.Second}); err != nil {
				t.Fatal(err)
			}
			if at := <-done; at != 190*time.Millisecond {
				t.Errorf("waiting call admitted at %v after SetLimit raised the rate tenfold at 100ms, want 190ms", at)
			}
		})
	})
}
