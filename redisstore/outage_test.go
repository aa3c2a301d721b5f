package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
)

// An outage makes srv unable to answer and returns the function that ends
// it.
type outage struct {
	name  string
	begin func(t *testing.T, srv *redistest.Server) (end func())
}

var outages = []outage{
	{"stopped", func(t *testing.T, srv *redistest.Server) func() {
		srv.Stop()
		return srv.Restart // with an empty dataset, as a server that lost its memory
	}},
	{"paused", func(t *testing.T, srv *redistest.Server) func() {
		srv.Pause(t, 10*time.Second)
		return func() { srv.Unpause(t) }
	}},
	{"slow", func(t *testing.T, srv *redistest.Server) func() {
		// Asleep for longer than a starved CPU (2 cores, -race, every
		// module's tests at once) was seen to take over the outage's
		// calls: with a second, the server woke before the last of them.
		done := make(chan struct{})
		go func() { srv.Sleep(t, 3*time.Second); close(done) }()
		// Wait until the server is asleep: a PING no longer answers, for
		// longer than a starved goroutine was seen to wait for a reply.
		c := srv.Client(t)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			err := c.Ping(ctx).Err()
			cancel()
			if err != nil {
				break
			}
		}
		return func() { <-done }
	}},
}

// TestOutage takes the server away (stopped, paused, asleep) under every
// layer: no call waits longer than about the 50 ms timeout; ratelimit
// fails open on what it had not used of its 1/N share or closed with ErrStoreUnavailable; retry
// spends its local share or makes no retry; effect runs nothing; each
// decision is an EventSharedStore event, the outage a warning; and when
// the server is back, the layers use it again and the Store says so.
func TestOutage(t *testing.T) {
	for _, o := range outages {
		t.Run(o.name, func(t *testing.T) {
			srv := redistest.Start(t)
			h := &logs{}
			s := newStore(t, srv, Config{Timeout: DefaultTimeout, Probe: 20 * time.Millisecond, Logger: slog.New(h)})
			obs := &events{}
			ctx := portico.ContextWithObserver(context.Background(), obs)
			req := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "c"}}

			limits := ratelimit.Limits{Requests: 100} // per minute; a tenth of it per instance
			open, err := ratelimit.New(ratelimit.Config{Limits: limits, Key: ratelimit.ByModel,
				Shared: ratelimit.Shared{Store: s.Buckets(), FailOpen: true, Instances: 10}})
			if err != nil {
				t.Fatal(err)
			}
			closed, err := ratelimit.New(ratelimit.Config{Limits: limits, Key: ratelimit.ByClient, Shared: ratelimit.Shared{Store: s.Buckets()}})
			if err != nil {
				t.Fatal(err)
			}
			var attempts atomic.Int32
			counted := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
				attempts.Add(1)
				return failing.Generate(ctx, r)
			})
			retrier := func(failOpen bool) portico.Model {
				sh := retry.Shared{Store: s.Budgets()}
				if failOpen {
					sh.FailOpen, sh.Instances = true, 10
				}
				r, err := retry.New(retry.Config{MaxAttempts: 3, Backoff: retry.Backoff{Schedule: retry.Immediate},
					Budget: retry.Budget{Burst: 20, Shared: sh}})
				if err != nil {
					t.Fatal(err)
				}
				return r.Wrap(counted)
			}
			retryOpen, retryClosed := retrier(true), retrier(false)
			runner, err := effect.New(effect.Config{Store: s.Effects()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { runner.Close() })
			ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
				return &portico.Response{Text: "ok"}, nil
			})
			// Before: the first calls dial; wait until one reached Redis.
			// Each one admitted is charged to the local share, whoever
			// decided it.
			before := 0
			untilAvailable(t, s, func() {
				if _, err := open.Wrap(ok).Generate(ctx, req); err == nil {
					before++
				}
			})
			obs.reset()
			h.reset()

			end := o.begin(t, srv)
			timed := func(what string, f func()) {
				t.Helper()
				start := time.Now()
				f()
				if d := time.Since(start); d > 300*time.Millisecond {
					t.Errorf("%s during the outage took %v: a call must not wait for Redis past its timeout", what, d)
				}
			}
			// ratelimit, failing open: the local share of 100/10 holds what
			// this instance had not used of it (10 less the calls admitted
			// before), from the first call of the outage, and decides
			// at once, never waiting for Redis (ratelimit's
			// TestFailOpenFleet checks the shares' bound).
			for i := range 3 {
				timed("ratelimit fail open", func() {
					_, err := open.Wrap(ok).Generate(ctx, req)
					// Beyond what is left, the refill may admit one more.
					if want := i < 10-before; want && err != nil || !want && err != nil && !errors.Is(err, ratelimit.ErrLimited) {
						t.Errorf("fail-open call %d after %d admitted before = %v, want admitted: %v (a share of 10)", i, before, err, want)
					}
				})
			}
			timed("ratelimit fail closed", func() {
				_, err := closed.Wrap(ok).Generate(ctx, req)
				if portico.ClassOf(err) != portico.Rejected || !errors.Is(err, ratelimit.ErrStoreUnavailable) || !errors.Is(err, ErrUnavailable) {
					t.Errorf("fail-closed call = %v, want Rejected wrapping ErrStoreUnavailable and ErrUnavailable", err)
				}
			})
			// retry, failing open: three failing requests on a local share
			// of 20/10 retries, which gives a retry once it holds a tenth
			// of one (a request's deposit of 0.1): 3 + 2 + 1 attempts.
			attempts.Store(0)
			for range 3 {
				timed("retry fail open", func() { retryOpen.Generate(ctx, req) })
			}
			if n := attempts.Load(); n != 6 {
				t.Errorf("fail-open retry made %d attempts for 3 failing requests, want 6", n)
			}
			attempts.Store(0)
			timed("retry fail closed", func() {
				_, err := retryClosed.Generate(ctx, req)
				if !errors.Is(err, retry.ErrBudgetExhausted) {
					t.Errorf("fail-closed retry = %v, want ErrBudgetExhausted", err)
				}
			})
			if n := attempts.Load(); n != 1 {
				t.Errorf("fail-closed retry made %d attempts, want 1 (no retry)", n)
			}
			ran := false
			timed("effect", func() {
				_, err := runner.Do(ctx, "key", func(context.Context) ([]byte, error) { ran = true; return nil, nil })
				if portico.ClassOf(err) != portico.Transient || !errors.Is(err, effect.ErrStore) {
					t.Errorf("effect during the outage = %v, want Transient wrapping effect.ErrStore", err)
				}
			})
			if ran {
				t.Error("the effect ran while its store was unreachable")
			}
			for _, c := range []struct {
				reason string
				n      int
			}{{"ratelimit:fail_open", 3}, {"ratelimit:fail_closed", 1}, {"retry:fail_open", 3 + 5}, {"retry:fail_closed", 2}, {"effect:fail_closed", 1}} {
				if got := obs.count(portico.EventSharedStore, c.reason); got != c.n {
					t.Errorf("%q events = %d, want %d", c.reason, got, c.n)
				}
			}
			if s.Available() || !h.has("WARN redisstore: redis unavailable") {
				t.Errorf("Available() = %v, warning logged = %v; want false, true", s.Available(), h.has("WARN redisstore: redis unavailable"))
			}

			end()
			// Back: within a probe interval or two the calls reach Redis
			// again (the limiter's key appears there).
			untilAvailable(t, s, func() { closed.Wrap(ok).Generate(ctx, req) })
			if _, err := closed.Wrap(ok).Generate(ctx, req); err != nil {
				t.Errorf("fail-closed call after the outage = %v, want admitted", err)
			}
			// The closed limiter's key: unnamed ("0:|"), a key function's ("=").
			if n, err := s.c.Exists(context.Background(), s.key("rl", "0:|=c")).Result(); err != nil || n != 1 {
				t.Errorf("the limiter's key in Redis after the outage: %d, %v; want it there", n, err)
			}
			if !h.has("INFO redisstore: redis available again") {
				t.Error("no record of the recovery logged")
			}
		})
	}
}

// untilAvailable makes calls every 5 ms until s reports the server
// available, for 3 s at most.
func untilAvailable(t *testing.T, s *Store, call func()) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(3 * time.Second); ; <-tick.C {
		call()
		if s.Available() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Redis is up but the Store still reports it unavailable after 3 s")
		}
	}
}
