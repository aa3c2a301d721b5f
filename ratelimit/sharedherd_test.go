package ratelimit

import (
	"errors"
	"slices"
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

// TestSharedLineHonoursMaxWait: a waiter whose admission would come after
// Config.MaxWait is refused, RateLimited, as soon as its turn in its key's
// line shows it (the store's wait then outlasts what MaxWait leaves), and
// the line forgets the key once it is empty.
func TestSharedLineHonoursMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		l := mustNew(t, Config{Limits: Limits{Requests: 1, Period: time.Second}, Mode: Wait, MaxWait: 2500 * time.Millisecond,
			Estimator: fixedEstimator(1), Shared: Shared{Store: f}})
		m := l.Wrap(okModel(1, 1))
		if _, err := m.Generate(t.Context(), req("tenant", 1)); err != nil {
			t.Fatal(err)
		}
		// One a second: the next three waiters would be admitted at 1, 2
		// and 3 s; at its turn, at 2 s, the third learns it would wait past
		// MaxWait (2.5 s) and is refused then.
		start := time.Now()
		var mu sync.Mutex
		var ends []time.Duration
		var refused int
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				_, err := m.Generate(t.Context(), req("tenant", 1))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if !errors.Is(err, ErrLimited) {
						t.Errorf("refused waiter: %v, want ErrLimited", err)
					}
					refused++
				}
				ends = append(ends, time.Since(start))
			})
			synctest.Wait()
		}
		wg.Wait()
		if want := []time.Duration{time.Second, 2 * time.Second, 2 * time.Second}; refused != 1 || !slices.Equal(ends, want) {
			t.Errorf("ends %v, %d refused; want %v, the last refused at its turn", ends, refused, want)
		}
		if n := len(l.shared.lines.m); n != 0 {
			t.Errorf("%d lines left, want 0", n)
		}
	})
}
