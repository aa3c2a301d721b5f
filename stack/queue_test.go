package stack

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// TestRouteQueue: five calls at once on a route capped at two in flight
// (100 ms an answer). Without a queue three are shed at once; with
// Route.Limiter.Queue they wait for a slot and all are answered, in three waves
// (100, 200 and 300 ms). A Queue without an in-flight cap is refused at
// construction, as ratelimit refuses it.
func TestRouteQueue(t *testing.T) {
	for _, size := range []int{0, 10} {
		synctest.Test(t, func(t *testing.T) {
			f := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "fine", FinishReason: portico.FinishStop}, Latency: 100 * time.Millisecond})
			a := route("a", f)
			a.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: 2}, Queue: ratelimit.Queue{Size: size}}
			s, err := New(Config{Routes: []Route{a}})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var shed atomic.Int32
			var last atomic.Int64
			start := time.Now()
			for range 5 {
				wg.Go(func() {
					if _, err := s.Generate(context.Background(), hello); err != nil {
						if portico.ClassOf(err) != portico.Rejected {
							t.Errorf("call = %v, want an answer or Rejected", err)
						}
						shed.Add(1)
						return
					}
					last.Store(int64(time.Since(start)))
				})
			}
			wg.Wait()
			wantShed, wantLast := int32(3), 100*time.Millisecond
			if size > 0 {
				wantShed, wantLast = 0, 300*time.Millisecond
			}
			if shed.Load() != wantShed || time.Duration(last.Load()) != wantLast {
				t.Errorf("queue %d: %d shed, last answer at %v; want %d, %v", size, shed.Load(), time.Duration(last.Load()), wantShed, wantLast)
			}
		})
	}
	a := route("a", modeltest.NewFake(modeltest.Answer("x")))
	a.Limiter = &ratelimit.Config{Queue: ratelimit.Queue{Size: 10}}
	if _, err := New(Config{Routes: []Route{a}}); err == nil || !strings.HasPrefix(err.Error(), "stack:") {
		t.Errorf("New with a Queue and no in-flight cap = %v, want a stack: error", err)
	}
}

// TestRouteQueueWaitsInPlaceAtMostWaitInPlace: route a, capped at one
// call in flight with a queue, is busy with a 10 s call; route b is idle.
// A second request under a 10 s deadline queues on a, a wait in place of
// unknown length: the group gives a context carrying WaitInPlace (500 ms)
// for such waits (portico.ContextWithMaxWait), but ratelimit's queue
// reads no MaxWait: it waits for a's whole share of the deadline (5.625 s)
// before b answers it.
func TestRouteQueueWaitsInPlaceAtMostWaitInPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "slow", FinishReason: portico.FinishStop}, Latency: 10 * time.Second})
		a := route("a", slow)
		a.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: 1}, Queue: ratelimit.Queue{Size: 10}}
		s, err := New(Config{Routes: []Route{a, route("b", modeltest.NewFake(modeltest.Answer("fine")))}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { s.Generate(context.Background(), hello) })
		synctest.Wait() // a's one slot is taken
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := s.Generate(ctx, hello)
		if took := time.Since(start); err != nil || resp.Route != "b" || took > 500*time.Millisecond {
			t.Errorf("Generate = %+v, %v after %v; want b's answer within WaitInPlace, 500ms", resp, err, took)
		}
		wg.Wait()
	})
}
