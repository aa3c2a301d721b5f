package ratelimit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

func TestStrings(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Reject.String(), "reject"}, {Wait.String(), "wait"}, {Mode(9).String(), "Mode(9)"},
		{FCFSCall.String(), "fcfs_call"}, {FCFSProgram.String(), "fcfs_program"}, {PLAS.String(), "plas"}, {Order(7).String(), "Order(7)"},
	} {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
	r := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "c"}}
	if ByClient(r) != "c" || ByModel(r) != "m" {
		t.Errorf("ByClient, ByModel = %q, %q; want c, m", ByClient(r), ByModel(r))
	}
}

// TestSetLimitInFlight: raising MaxInFlight hands the new slots to queued
// calls at once; turning the request bucket on and off works live.
func TestSetLimitInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: 4})
		m := l.Wrap(slowModel(10*time.Second, 1))
		var wg sync.WaitGroup
		start := time.Now()
		ends := make(chan time.Duration, 3)
		for range 3 {
			wg.Go(func() { m.Generate(t.Context(), req("a", 1)); ends <- time.Since(start) })
			synctest.Wait()
		}
		if err := l.SetLimit(Limits{MaxInFlight: 3}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(ends)
		for d := range ends {
			if d != 10*time.Second {
				t.Errorf("a call ended at %v, want 10s (all three in flight after SetLimit)", d)
			}
		}
		// Turn a request bucket on: one per second, burst 1.
		if err := l.SetLimit(Limits{MaxInFlight: 3, Requests: 60, RequestBurst: 1}); err != nil {
			t.Fatal(err)
		}
		m2 := l.Wrap(okModel(1, 1))
		m2.Generate(t.Context(), req("a", 1))
		if _, err := m2.Generate(t.Context(), req("a", 1)); portico.RetryAfterOf(err) != time.Second {
			t.Errorf("second call with 1 request/s = %v, want RetryAfter 1s", err)
		}
		if err := l.SetLimit(Limits{MaxInFlight: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := m2.Generate(t.Context(), req("a", 1)); err != nil {
			t.Errorf("after removing the request bucket = %v, want admitted", err)
		}
		if err := l.SetLimit(Limits{Requests: 5}); err == nil {
			t.Errorf("SetLimit without MaxInFlight while Queue is set = nil, want an error")
		}
	})
}

// TestProgramsForgotten: program histories are dropped ProgramTTL after
// their last call, so sessions do not accumulate.
func TestProgramsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 4}, Queue: 4, Order: PLAS, ProgramTTL: time.Minute})
		m := l.Wrap(okModel(1, 1))
		r := req("a", 1)
		for i := range 1000 {
			r.Identity.SessionID = "s" + string(rune('a'+i%26)) + time.Duration(i).String()
			m.Generate(context.Background(), r)
			if i%100 == 99 {
				time.Sleep(time.Minute)
			}
		}
		e := l.acquire(l.keyOf(r), l.now())
		n := len(e.programs)
		e.mu.Unlock()
		if n > 2*100+minSweep {
			t.Errorf("programs remembered after 1000 sessions over 10 minutes = %d, want <= %d", n, 2*100+minSweep)
		}
	})
}
