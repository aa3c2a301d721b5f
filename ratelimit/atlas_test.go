package ratelimit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestATLASCriticalPath: program A fans out four calls of 10 ms at once
// (40 ms of service, a critical path of 10 ms), program B makes two calls
// of 10 ms one after the other (20 ms either way). With every slot taken,
// B's call queued before A's: PLAS serves B first (20 ms < 40 ms), ATLAS
// serves A first (10 ms < 20 ms), and FCFS per call B, which came first.
// The slots free one at a time, so that the queue's choice alone decides
// which call starts first.
func TestATLASCriticalPath(t *testing.T) {
	for _, c := range []struct {
		order Order
		first string
	}{{PLAS, "B"}, {ATLAS, "A"}, {FCFSCall, "B"}} {
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, Config{Limits: Limits{MaxInFlight: 4},
				Queue: Queue{Size: 16, Order: c.order, PLAS: PLASConfig{Quantum: time.Millisecond, Levels: 16, Starvation: 1e9}}})
			var mu sync.Mutex
			var started []string
			m := l.Wrap(portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
				mu.Lock()
				started = append(started, r.Identity.SessionID)
				mu.Unlock()
				time.Sleep(time.Duration(r.MaxOutputTokens) * time.Millisecond)
				return &portico.Response{}, nil
			}))
			call := func(session string, ms int) {
				r := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}, MaxOutputTokens: ms, Identity: portico.Identity{SessionID: session}}
				if _, err := m.Generate(t.Context(), r); err != nil {
					t.Error(err)
				}
			}
			call("B", 10)
			call("B", 10)
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() { call("A", 10) })
			}
			wg.Wait()
			for i := range 4 { // every slot taken, one freed at each of 10, 11, 12 and 13 ms
				wg.Go(func() { call("", 10+i) })
			}
			synctest.Wait()
			wg.Go(func() { call("B", 1) })
			synctest.Wait()
			wg.Go(func() { call("A", 1) })
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if got := started[len(started)-2]; got != c.first {
				t.Errorf("%v: %s's queued call started first, want %s's (order %v)", c.order, got, c.first, started)
			}
		})
	}
}
