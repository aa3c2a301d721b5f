package ratelimit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestAgingStartsWaiterHeldByReserve: a Default call queued only because
// of Reserve (MaxInFlight 2, Reserve 1, one call in flight) ranks Critical
// after Aging (1s) and starts then, on the free reserved slot, with no
// arrival or release to dispatch it; not when the long call ends.
func TestAgingStartsWaiterHeldByReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Limits: Limits{MaxInFlight: 2}, Reserve: 1, Queue: Queue{Size: 4, Aging: time.Second}}
		s := &served{t0: time.Now()}
		m := mustNew(t, cfg).Wrap(s.model(time.Minute))
		var wg sync.WaitGroup
		for _, name := range []string{"long", "aged"} {
			wg.Go(func() {
				if _, err := m.Generate(t.Context(), named(name, portico.Default)); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			})
			synctest.Wait()
		}
		wg.Wait()
		if got, want := s.String(), "long@0s aged@1s"; got != want {
			t.Errorf("served %q, want %q", got, want)
		}
	})
}

// TestAgedWaiterStartsBeforeLaterCall: MaxInFlight 3, Reserve 1, a queue
// of one. A Sheddable call queued behind one long Default call ranks
// Default after 1s and takes the free Default slot then, so a Default call
// arriving at 1.5s is queued (the last slot is Critical's), not shed, and
// starts on that slot when it ranks Critical in turn, at 2.5s.
func TestAgedWaiterStartsBeforeLaterCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Limits: Limits{MaxInFlight: 3}, Reserve: 1, Queue: Queue{Size: 1, Aging: time.Second}}
		s := &served{t0: time.Now()}
		m := mustNew(t, cfg).Wrap(s.model(time.Minute))
		var wg sync.WaitGroup
		for _, c := range []call{{"long", portico.Default, 0, nil}, {"shed", portico.Sheddable, 0, nil}, {"late", portico.Default, 1500 * time.Millisecond, nil}} {
			time.Sleep(c.at - time.Since(s.t0))
			wg.Go(func() {
				if _, err := m.Generate(t.Context(), named(c.name, c.p)); err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
			})
			synctest.Wait()
		}
		wg.Wait()
		if got, want := s.String(), "long@0s shed@1s late@2.5s"; got != want {
			t.Errorf("served %q, want %q", got, want)
		}
	})
}

// TestAgingTimerStops: the aging timer runs only while a waiter is held by
// Reserve alone; once the waiter leaves (its context ends), it is stopped,
// and an aging step past its end dispatches nothing.
func TestAgingTimerStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Limits: Limits{MaxInFlight: 2}, Reserve: 1, Queue: Queue{Size: 4, Aging: time.Second}}
		l := mustNew(t, cfg)
		s := &served{t0: time.Now()}
		m := l.Wrap(s.model(time.Minute))
		var wg sync.WaitGroup
		wg.Go(func() { m.Generate(t.Context(), named("long", portico.Default)) })
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		if _, err := m.Generate(ctx, named("gone", portico.Default)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("gone: err = %v, want context.DeadlineExceeded", err)
		}
		e := l.entryOf(named("x", portico.Default))
		e.mu.Lock()
		if e.age == nil || e.age.Stop() {
			t.Errorf("aging timer armed = %v after the only waiter left, want made and stopped", e.age != nil)
		}
		e.mu.Unlock()
		wg.Wait()
		if got, want := s.String(), "long@0s"; got != want {
			t.Errorf("served %q, want %q", got, want)
		}
	})
}

// TestQueueDispatchesBeforeShedding: the cap (Config.Concurrency) rises
// from 1 to 3 with no release to dispatch the queued call; the next call
// finds the queue full but slots free: the waiter starts and so does the
// new call, none is shed.
func TestQueueDispatchesBeforeShedding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &movingCap{}
		c.limit.Store(1)
		s := &served{t0: time.Now()}
		m := mustNew(t, Config{Concurrency: c, Queue: Queue{Size: 1}}).Wrap(s.model(time.Minute))
		var wg sync.WaitGroup
		for _, name := range []string{"first", "queued"} {
			wg.Go(func() {
				if _, err := m.Generate(t.Context(), named(name, portico.Default)); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			})
			synctest.Wait()
		}
		time.Sleep(time.Second)
		c.limit.Store(3)
		if _, err := m.Generate(t.Context(), named("new", portico.Default)); err != nil {
			t.Errorf("new: %v", err)
		}
		wg.Wait()
		got := strings.Fields(s.String())
		slices.Sort(got) // queued and new start at the same instant
		if got, want := strings.Join(got, " "), "first@0s new@1s queued@1s"; got != want {
			t.Errorf("served %q, want %q", got, want)
		}
	})
}

// TestCriticalHedgeTakesReservedSlot: a hedge takes spare capacity only,
// but a Critical hedge's spare capacity includes the reserved slot, even
// while a Default call is queued below the reserve.
func TestCriticalHedgeTakesReservedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &served{t0: time.Now()}
		m := mustNew(t, Config{Limits: Limits{MaxInFlight: 2}, Reserve: 1, Queue: Queue{Size: 2}}).Wrap(s.model(time.Second))
		var wg sync.WaitGroup
		for _, name := range []string{"d1", "d2"} {
			wg.Go(func() {
				if _, err := m.Generate(t.Context(), named(name, portico.Default)); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			})
			synctest.Wait()
		}
		h := named("hedge", portico.Critical)
		h.Hedge = true
		if _, err := m.Generate(t.Context(), h); err != nil {
			t.Errorf("Critical hedge with the reserved slot free: %v", err)
		}
		wg.Wait()
		if got, want := s.String(), "d1@0s hedge@0s d2@1s"; got != want {
			t.Errorf("served %q, want %q", got, want)
		}
	})
}
