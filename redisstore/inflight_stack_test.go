package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/inflight"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/stack"
)

// TestInFlightThroughStacks: three stacks built by stack.New (three
// instances), each its own client of one Redis, tenant cap 4
// (stack.Config.InFlight): 30 callers making 5 calls of 10 ms each never
// have more than 4 calls at the route at once; refusals name the client
// limit, and another tenant's cap is its own.
func TestInFlightThroughStacks(t *testing.T) {
	srv := redistest.Start(t)
	h := &holder{hold: 10 * time.Millisecond}
	var inst [3]*stack.Stack
	for i := range inst {
		s, err := stack.New(stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "r", Model: h}}},
			InFlight: &inflight.Config{Max: 4, Shared: portico.Shared[inflight.Store]{Store: newStore(t, srv, Config{}).InFlight()}}})
		if err != nil {
			t.Fatal(err)
		}
		inst[i] = s
	}
	var wg sync.WaitGroup
	var admitted, full atomic.Int64
	for i := range 30 {
		wg.Go(func() {
			for range 5 {
				_, err := inst[i%3].Generate(context.Background(), tenantReq("t"))
				switch {
				case err == nil:
					admitted.Add(1)
				case errors.Is(err, inflight.ErrFull) && portico.RefuserOf(err) == portico.ClientLimit:
					full.Add(1)
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("3 stacks, 30 callers, 150 calls: %d admitted, %d refused, max in flight %d", admitted.Load(), full.Load(), h.maximum.Load())
	if h.maximum.Load() != 4 {
		t.Errorf("max in flight = %d, want 4", h.maximum.Load())
	}
	if _, err := inst[0].Generate(context.Background(), tenantReq("u")); err != nil {
		t.Errorf("tenant u: %v", err)
	}
}
