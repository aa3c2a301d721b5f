package ratelimit

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestSharedWaitersDoNotStampede: in Wait mode over a shared Store every
// waiter of a key sleeps for the wait the store computed (the least wait
// after which the same take succeeds: the same instant for all of them),
// then asks again; one wins and the others sleep again. Store round trips
// grow with the square of the waiters: against a real redis-server, 4
// stack instances with a tenant at 100 requests/s (burst 1) made 940
// EVALSHA calls for 40 waiters and 19,670 for 200, about 100 per admitted
// call, all on one hot key. The in-memory Limiter serves its waiters in
// order without this. A waiter should cost the store a bounded number of
// round trips (a reservation, or waits spread by the waiter's position).
func TestSharedWaitersDoNotStampede(t *testing.T) {
	t.Skip("bug: shared Wait-mode waiters all wake at the store's wait and retry: store round trips grow with the square of the waiters")
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		l := mustNew(t, Config{Limits: Limits{Requests: 100, RequestBurst: 1, Period: time.Second}, Mode: Wait,
			Estimator: fixedEstimator(1), Shared: Shared{Store: f}})
		m := l.Wrap(okModel(1, 1))
		const n = 100
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				if _, err := m.Generate(t.Context(), req("tenant", 1)); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("waiter refused: %v", err)
		}
		f.mu.Lock()
		takes := len(f.lims)
		f.mu.Unlock()
		if takes > 3*n {
			t.Errorf("%d waiters made %d Takes on the store (%.1f each), want at most %d", n, takes, float64(takes)/n, 3*n)
		}
	})
}
