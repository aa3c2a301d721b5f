package ratelimit

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/portico-llm/portico"
)

// TestJanitorEmptiesIdleTable: keys that called once and went idle are all
// evicted by the janitor, with no call arriving, within two periods of
// their last call, and the table gives back its maps and snapshots; a key
// with a call in flight is kept, the same entry. 60 requests a minute: a
// key that called is full again after a second, and the period is a
// minute.
func TestJanitorEmptiesIdleTable(t *testing.T) {
	n := 200_000
	if testing.Short() || raceEnabled {
		n = 20_000
	}
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Requests: 60, Period: time.Minute}})
		if p := l.janitorPeriod(); p != time.Minute {
			t.Fatalf("janitorPeriod = %v, want 1m", p)
		}
		release := make(chan struct{})
		m := l.Wrap(portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
			if r.Identity.ClientKey == "live" {
				<-release
			}
			return &portico.Response{}, nil
		}))
		held := make(chan error)
		go func() {
			_, err := m.Generate(t.Context(), req("live", 1))
			held <- err
		}()
		synctest.Wait()
		live := l.entryOf(req("live", 1))
		r := req("", 1)
		for i := range n {
			r.Identity.ClientKey = strconv.Itoa(i)
			if _, err := m.Generate(t.Context(), r); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if k := l.Keys(); k < n/2 {
			t.Fatalf("after %d new keys in one instant the table holds %d, want about all of them", n, k)
		}
		time.Sleep(2 * time.Minute)
		if k, e := l.Keys(), l.entryOf(req("live", 1)); k != 1 || e != live {
			t.Errorf("two janitor periods after %d keys went idle: %d keys, live key's entry %p (was %p); want 1, the same", n, k, e, live)
		}
		close(release)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		shards := 0
		for i := range l.shards {
			s := &l.shards[i]
			s.mu.Lock()
			if s.m != nil {
				shards++
			}
			s.mu.Unlock()
		}
		if k := l.Keys(); k != 0 || shards != 0 || l.armed.Load() {
			t.Errorf("two periods after the last call ended: %d keys, %d shards holding a map or snapshot, janitor armed %v; want 0, 0, false", k, shards, l.armed.Load())
		}
		// A new key arms the janitor again.
		if _, err := m.Generate(t.Context(), req("again", 1)); err != nil || !l.armed.Load() {
			t.Errorf("call on an empty table: %v, janitor armed %v; want admitted, true", err, l.armed.Load())
		}
	})
}

// TestJanitorPeriod: the period is the refill time of the limits, at least
// a minute, at most a day.
func TestJanitorPeriod(t *testing.T) {
	for _, tc := range []struct {
		lim  Limits
		want time.Duration
	}{
		{Limits{Requests: 60, Period: time.Minute}, time.Minute},
		{Limits{Requests: 100, RequestBurst: 100, Period: time.Hour}, time.Hour},
		{Limits{Tokens: 1000, TokenBurst: 500, Requests: 1e6, RequestBurst: 1000, Period: 4 * time.Hour}, 2 * time.Hour},
		{Limits{Requests: 1, Period: 1000 * time.Hour}, 24 * time.Hour},
		{Limits{MaxInFlight: 3}, time.Minute},
	} {
		if got := mustNew(t, Config{Limits: tc.lim, DefaultMaxTokens: 10}).janitorPeriod(); got != tc.want {
			t.Errorf("janitorPeriod of %+v = %v, want %v", tc.lim, got, tc.want)
		}
	}
}

// TestJanitorLetsLimiterGo: a pending janitor timer does not keep a Limiter
// its user dropped alive.
func TestJanitorLetsLimiterGo(t *testing.T) {
	l := mustNew(t, Config{Limits: Limits{Requests: 60, Period: time.Minute}})
	if _, err := l.Wrap(okModel(1, 1)).Generate(context.Background(), req("k", 1)); err != nil || !l.armed.Load() {
		t.Fatalf("first call: %v, janitor armed %v; want admitted, true", err, l.armed.Load())
	}
	w := weak.Make(l)
	l = nil
	runtime.GC()
	runtime.GC()
	if w.Value() != nil {
		t.Error("a dropped Limiter with its janitor armed was not collected")
	}
}
