package ratelimit

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestSharedFailOpenKeepsTheSharedBound: the fail-open share is meant to
// keep N instances "together within the shared limit" (Shared, package
// doc). But the local buckets start full whatever the shared bucket held:
// a tenant that has just spent its whole shared burst gets every
// instance's full local share the moment the store fails, so within one
// instant N instances admit twice the burst (b + b, not b + r*dt). A
// Redis that blips under load (one 50 ms timeout starts an outage) hands
// every tenant a second burst each time, and a store that flaps each
// Probe interval lets a tenant run near twice its rate. Seen end to end
// with 4 stack instances over a real redis-server under -race: a tenant
// limited to 5 requests got 9.
func TestSharedFailOpenKeepsTheSharedBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		lim := Limits{Requests: 8} // per minute; burst 8
		var ls []*Limiter
		for range 4 {
			ls = append(ls, mustNew(t, Config{Limits: lim, Estimator: fixedEstimator(1),
				Shared: Shared{Store: f, FailOpen: true, Instances: 4}}))
		}
		admitted := 0
		try := func(l *Limiter) {
			if _, err := l.Wrap(okModel(1, 1)).Generate(t.Context(), req("tenant", 1)); err == nil {
				admitted++
			}
		}
		for i := range 16 { // the store admits 8 of these, 2 per instance
			try(ls[i%4])
		}
		if admitted != 8 {
			t.Fatalf("store up: admitted %d of 16, want the burst of 8", admitted)
		}
		f.setDown(true) // the same instant: nothing has refilled
		for i := range 16 {
			try(ls[i%4])
		}
		if admitted > 8 {
			t.Errorf("admitted %d in one instant across 4 fail-open instances, want at most the shared burst of 8", admitted)
		}
	})
}

// TestSharedFailOpenDrainsAtEachOutage: a local share that filled up while
// the store was back (its buckets refill in memory) starts empty again when
// the next outage begins.
func TestSharedFailOpenDrainsAtEachOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		l := mustNew(t, Config{Limits: Limits{Requests: 8}, Estimator: fixedEstimator(1),
			Shared: Shared{Store: f, FailOpen: true, Instances: 4}})
		m := l.Wrap(okModel(1, 1))
		call := func() error { _, err := m.Generate(t.Context(), req("tenant", 1)); return err }
		f.setDown(true)
		if err := call(); err == nil {
			t.Fatal("first call of the first outage admitted, want refused: the share starts empty")
		}
		time.Sleep(time.Minute) // the share fills: 2 requests
		f.setDown(false)
		if err := call(); err != nil {
			t.Fatalf("call with the store back = %v, want admitted", err)
		}
		time.Sleep(time.Minute)
		f.setDown(true)
		if err := call(); err == nil {
			t.Error("first call of the second outage admitted, want refused: the share is drained as each outage begins")
		}
		time.Sleep(30 * time.Second) // a quarter of 8 a minute: one request in 30 s
		if err := call(); err != nil {
			t.Errorf("30 s into the second outage: %v, want admitted", err)
		}
	})
}
