package ratelimit

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

func TestStrings(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Reject.String(), "reject"}, {Wait.String(), "wait"}, {Mode(9).String(), "Mode(9)"},
		{FCFSCall.String(), "fcfs_call"}, {FCFSProgram.String(), "fcfs_program"}, {PLAS.String(), "plas"}, {ATLAS.String(), "atlas"}, {Order(7).String(), "Order(7)"},
		{Auto.String(), "auto"}, {Strict.String(), "strict"}, {Leased.String(), "leased"}, {Sharing(7).String(), "Sharing(7)"},
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
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 4}})
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
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 4}, Queue: Queue{Size: 4, Order: PLAS, ProgramTTL: time.Minute}})
		m := l.Wrap(okModel(1, 1))
		r := req("a", 1)
		for i := range 1000 {
			r.Identity.SessionID = "s" + string(rune('a'+i%26)) + time.Duration(i).String()
			m.Generate(context.Background(), r)
			if i%100 == 99 {
				time.Sleep(time.Minute)
			}
		}
		e := l.acquire(l.keyOf(r), r, mono.Now())
		n := len(e.w().programs)
		e.mu.Unlock()
		if n > 2*100+minSweep {
			t.Errorf("programs remembered after 1000 sessions over 10 minutes = %d, want <= %d", n, 2*100+minSweep)
		}
	})
}

// TestSetLimitRace: SetLimit called over and over while real goroutines make
// calls on a few keys (turning the token and request buckets on and off,
// moving MaxInFlight and the burst, with provider views in the responses
// and Wait mode holding calls in line) never panics or races (run with
// -race), refuses only with the Limiter's own errors, and leaves nothing in
// flight, queued or held.
func TestSetLimitRace(t *testing.T) {
	limits := []Limits{
		{Tokens: 1e9, MaxInFlight: 2},
		{Tokens: 6000, TokenBurst: 100, Requests: 600, MaxInFlight: 1},
		{Requests: 6000, RequestBurst: 2, MaxInFlight: 4},
		{Tokens: 60_000, TokenBurst: 200, MaxInFlight: 3, Period: time.Second},
	}
	l := mustNew(t, Config{Limits: limits[0], Mode: Wait, MaxWait: 20 * time.Millisecond, DefaultMaxTokens: 50, Estimator: fixedEstimator(5), Queue: Queue{Size: 2, Order: PLAS}})
	var n atomic.Int64
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		k := int(n.Add(1))
		resp := &portico.Response{Usage: portico.Usage{InputTokens: 5, OutputTokens: k % 60}}
		if k%7 == 0 {
			resp.RateLimit = &portico.RateLimit{Tokens: portico.Quota{Known: true, Limit: 1000, Remaining: k % 1000, Reset: time.Duration(k%50) * time.Millisecond}}
		}
		return resp, nil
	}))
	stop := make(chan struct{})
	var setter sync.WaitGroup
	setter.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := l.SetLimit(limits[i%len(limits)]); err != nil {
				t.Errorf("SetLimit(%+v) = %v", limits[i%len(limits)], err)
				return
			}
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			r := req("k"+strconv.Itoa(g%3), 0)
			r.Identity.SessionID = "s" + strconv.Itoa(g)
			for range 300 {
				_, err := m.Generate(context.Background(), r)
				if err != nil && !errors.Is(err, ErrLimited) && !errors.Is(err, ErrOverloaded) {
					t.Errorf("call = %v, want nil, ErrLimited or ErrOverloaded", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	setter.Wait()
	for g := range 3 {
		e := l.acquire(l.keyOf(req("k"+strconv.Itoa(g), 0)), nil, mono.Now())
		inflight, queue, holds := e.inflight, e.queued(), e.held()
		e.mu.Unlock()
		if inflight != 0 || queue != 0 || holds != 0 {
			t.Errorf("key k%d after all calls: in flight %d, queued %d, holds %d; want 0", g, inflight, queue, holds)
		}
	}
}
