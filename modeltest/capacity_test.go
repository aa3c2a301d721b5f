package modeltest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

func mustServer(t *testing.T, cfg CapacityConfig) *CapacityServer {
	t.Helper()
	s, err := NewCapacityServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewServerRejects(t *testing.T) {
	for _, cfg := range []CapacityConfig{{Slots: -1}, {ServiceTime: -time.Second}, {QueueLimit: -1}} {
		if s, err := NewCapacityServer(cfg); err == nil || s != nil {
			t.Errorf("NewCapacityServer(%+v) = (%v, %v), want (nil, an error)", cfg, s, err)
		}
	}
}

// TestServerFIFO sends 5 calls at once to 2 slots of 1 s: they finish at 1, 1,
// 2, 2 and 3 s, in arrival order.
func TestServerFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustServer(t, CapacityConfig{Slots: 2, ServiceTime: time.Second})
		start := time.Now()
		took := make([]time.Duration, 5)
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				resp, err := s.Generate(t.Context(), userReq("q"))
				if err != nil || resp.Text != "ok" {
					t.Errorf("call %d = (%v, %v), want ok", i, resp, err)
				}
				took[i] = time.Since(start)
			})
			synctest.Wait() // call i is queued before call i+1
		}
		wg.Wait()
		want := []time.Duration{time.Second, time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second}
		for i := range want {
			if took[i] != want[i] {
				t.Errorf("call %d took %v, want %v", i, took[i], want[i])
			}
		}
		if st := s.Stats(); st != (CapacityStats{Arrived: 5, Useful: 5}) {
			t.Errorf("Stats() = %+v, want 5 arrived, 5 useful", st)
		}
	})
}

// TestServerDoesNotKnowWhoGaveUp: a caller that gives up returns at once, but its
// call still takes its slot, delaying the next caller; with DropExpired it does not.
// TestServerSetSlots: 6 calls of 1 s at once on 1 slot; at 1.5 s the server
// grows to 3 slots (two queued calls start at once, a third when call 1
// ends at 2 s), and at 2.25 s shrinks to 1 (the three in service finish,
// then the last call starts): the calls end at 1, 2, 2.5, 2.5, 3 and 4 s.
func TestServerSetSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustServer(t, CapacityConfig{Slots: 1, ServiceTime: time.Second})
		start := time.Now()
		took := make([]time.Duration, 6)
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				if _, err := s.Generate(t.Context(), userReq("q")); err != nil {
					t.Errorf("call %d: %v", i, err)
				}
				took[i] = time.Since(start)
			})
			synctest.Wait()
		}
		time.Sleep(1500 * time.Millisecond)
		s.SetSlots(3)
		if st := s.Stats(); st.Busy != 3 || st.Queued != 2 {
			t.Errorf("after SetSlots(3): %d busy, %d queued, want 3 and 2", st.Busy, st.Queued)
		}
		time.Sleep(750 * time.Millisecond)
		s.SetSlots(1)
		wg.Wait()
		want := []time.Duration{1000, 2000, 2500, 2500, 3000, 4000}
		for i := range want {
			if took[i] != want[i]*time.Millisecond {
				t.Errorf("call %d took %v, want %v", i, took[i], want[i]*time.Millisecond)
			}
		}
		defer func() {
			if recover() == nil {
				t.Error("SetSlots(0) did not panic")
			}
		}()
		s.SetSlots(0)
	})
}

func TestServerDoesNotKnowWhoGaveUp(t *testing.T) {
	for _, drop := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			s := mustServer(t, CapacityConfig{ServiceTime: time.Second, DropExpired: drop})
			var wg sync.WaitGroup
			// Call 0 holds the slot for 1 s; call 1 gives up after 0.5 s while queued.
			wg.Go(func() { s.Generate(t.Context(), userReq("q")) })
			synctest.Wait()
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
				defer cancel()
				start := time.Now()
				resp, err := s.Generate(ctx, userReq("q"))
				if resp != nil || portico.ClassOf(err) != portico.Deadline || time.Since(start) != 500*time.Millisecond {
					t.Errorf("impatient call = (%v, %v) after %v, want a deadline error after 500ms", resp, err, time.Since(start))
				}
			})
			synctest.Wait()
			start := time.Now()
			if _, err := s.Generate(t.Context(), userReq("q")); err != nil {
				t.Fatal(err)
			}
			want, st := 3*time.Second, CapacityStats{Arrived: 3, Useful: 2, Wasted: 1}
			if drop {
				want, st = 2*time.Second, CapacityStats{Arrived: 3, Useful: 2, Dropped: 1}
			}
			if got := time.Since(start); got != want {
				t.Errorf("DropExpired %v: third call took %v, want %v", drop, got, want)
			}
			wg.Wait()
			if got := s.Stats(); got != st {
				t.Errorf("DropExpired %v: Stats() = %+v, want %+v", drop, got, st)
			}
		})
	}
}

// TestServerDropsCallsThatWouldFinishLate: with DropExpired, a call whose
// deadline falls within a service time of its dequeueing is skipped, not
// served for nobody; its caller is not told and returns at its deadline. Call
// 0 holds the 1 s slot; call 1 (deadline 1.5 s) would finish at 2 s; call 2
// (no deadline) gets the slot at 1 s. Without DropExpired call 1 is served
// from 1 s to 2 s and wasted, and call 2 ends at 3 s.
func TestServerDropsCallsThatWouldFinishLate(t *testing.T) {
	for _, drop := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			s := mustServer(t, CapacityConfig{ServiceTime: time.Second, DropExpired: drop})
			start := time.Now()
			var wg sync.WaitGroup
			wg.Go(func() { s.Generate(t.Context(), userReq("q")) })
			synctest.Wait()
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
				defer cancel()
				resp, err := s.Generate(ctx, userReq("q"))
				if resp != nil || portico.ClassOf(err) != portico.Deadline || time.Since(start) != 1500*time.Millisecond {
					t.Errorf("DropExpired %v: late call = (%v, %v) after %v, want a deadline error at its deadline, 1.5s", drop, resp, err, time.Since(start))
				}
			})
			synctest.Wait()
			if _, err := s.Generate(t.Context(), userReq("q")); err != nil {
				t.Fatal(err)
			}
			want, st := 3*time.Second, CapacityStats{Arrived: 3, Useful: 2, Wasted: 1}
			if drop {
				want, st = 2*time.Second, CapacityStats{Arrived: 3, Useful: 2, Dropped: 1}
			}
			if got := time.Since(start); got != want {
				t.Errorf("DropExpired %v: third call ended at %v, want %v", drop, got, want)
			}
			wg.Wait()
			if got := s.Stats(); got != st {
				t.Errorf("DropExpired %v: Stats() = %+v, want %+v", drop, got, st)
			}
		})
	}
}

func TestServerQueueLimitAndDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustServer(t, CapacityConfig{ServiceTime: time.Second, QueueLimit: 1, Response: &portico.Response{Text: "a b"}})
		s.SetDown(true)
		done := make(chan error, 1)
		go func() {
			var got []string
			req := userReq("q")
			req.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
			resp, err := s.Generate(t.Context(), req)
			if err == nil && (len(got) != 2 || resp.Text != "a b") {
				t.Errorf("streamed %q, text %q, want [a  b] and a b", got, resp.Text)
			}
			done <- err
		}()
		synctest.Wait()
		if _, err := s.Generate(t.Context(), userReq("q")); !errors.Is(err, portico.ErrTransient) || !errors.Is(err, ErrInjected) {
			t.Errorf("Generate on a full queue = %v, want an injected 503", err)
		}
		time.Sleep(time.Hour)
		if st := s.Stats(); st.Queued != 1 || st.Busy != 0 || st.Rejected != 1 {
			t.Errorf("Stats() while down = %+v, want 1 queued, 0 busy, 1 rejected", st)
		}
		start := time.Now()
		s.SetDown(false)
		if err := <-done; err != nil || time.Since(start) != time.Second {
			t.Errorf("queued call after the outage = %v after %v, want ok after 1s", err, time.Since(start))
		}
	})
}

func TestRunServer(t *testing.T) {
	RunModel(t, func(t *testing.T) portico.Model {
		return mustServer(t, CapacityConfig{Slots: 4, ServiceTime: time.Millisecond})
	})
}

func TestServerNilRequest(t *testing.T) {
	s := mustServer(t, CapacityConfig{})
	resp, err := s.Generate(context.Background(), nil)
	if resp != nil || portico.ClassOf(err) != portico.Permanent || s.Stats() != (CapacityStats{}) {
		t.Errorf("Generate(nil) = (%v, %v), Stats %+v; want a permanent error and nothing queued", resp, err, s.Stats())
	}
}
