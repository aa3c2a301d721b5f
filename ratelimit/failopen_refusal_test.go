package ratelimit

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestSharedFailOpenDrainsAfterARefusal: the store came back and refused
// the only call it saw (the key's shared bucket was spent), then failed
// again. The store decided that call, so the outage that follows is a new
// one and its local share should start empty (shared.out: "cleared by the
// next call the store decides"). Only an admission clears out, so the
// share, filled since the first outage began, admits at once.
func TestSharedFailOpenDrainsAfterARefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		l := mustNew(t, Config{Limits: Limits{Requests: 8}, Estimator: fixedEstimator(1),
			Shared: Shared{Store: f, FailOpen: true, Instances: 4}})
		m := l.Wrap(okModel(1, 1))
		call := func() error { _, err := m.Generate(t.Context(), req("tenant", 1)); return err }
		for range 8 { // the shared burst, spent
			if err := call(); err != nil {
				t.Fatal(err)
			}
		}
		f.setDown(true)
		if err := call(); err == nil {
			t.Fatal("first call of the first outage admitted, want refused: the share starts empty")
		}
		f.setDown(false)
		if err := call(); err == nil {
			t.Fatal("store back with the bucket spent: admitted, want refused by the store")
		}
		time.Sleep(30 * time.Second) // the local share refills one request
		f.setDown(true)
		if err := call(); err == nil {
			t.Error("first call of the second outage admitted, want refused: the store decided a call since the first, so the share is drained again")
		}
	})
}
