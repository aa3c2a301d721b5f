package ratelimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestSharedLineNotHeldByDegradedCall: in Wait mode a shared key's waiters
// wait in line, and the head asks the store again when its wait ends. If
// the store has failed by then, the head's call is decided on the local
// share (fail-open) and runs the model inside admit, still holding the
// line: every waiter behind it waits for the head's whole call, and one
// whose MaxWait ends first is refused RateLimited ("waited in line past
// MaxWait") though the store is down and the local share would take it.
// The line should be given back before the model runs.
func TestSharedLineNotHeldByDegradedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		l := mustNew(t, Config{Limits: Limits{Requests: 60}, Mode: Wait, MaxWait: 10 * time.Second, Estimator: fixedEstimator(1),
			Shared: Shared{Store: f, FailOpen: true, Instances: 1}})
		m := l.Wrap(slowModel(30*time.Second, 1))
		for range 60 { // the shared burst, spent at once (the calls take 30 s each)
			go m.Generate(t.Context(), req("tenant", 1))
		}
		synctest.Wait()
		errs := make(chan error, 2)
		start := time.Now()
		started := make(chan time.Duration, 2)
		rec := l.Wrap(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			started <- time.Since(start)
			return slowModel(30*time.Second, 1).Generate(ctx, r)
		}))
		for range 2 { // the head sleeps to its wait, the other waits in line behind it
			go func() { _, err := rec.Generate(t.Context(), req("tenant", 1)); errs <- err }()
			synctest.Wait()
		}
		time.Sleep(500 * time.Millisecond)
		f.setDown(true) // before the head's wait ends
		for range 2 {
			if err := <-errs; err != nil {
				t.Errorf("waiter with the store down (fail-open) = %v at %v, want admitted by the local share", err, time.Since(start))
			}
		}
		close(started)
		for d := range started {
			if d > 10*time.Second {
				t.Errorf("a waiter's call started %v in, want within its MaxWait: the line was held through the head's call", d)
			}
		}
	})
}
