package ratelimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestWaitInPlaceCap: a routing layer with another route caps a wait in
// place (portico.ContextWithMaxWait, 100 ms here). A call queued for a slot
// held for a second is shed at the cap (Rejected, not sent), and a Wait-mode
// call whose bucket refills in a second is refused at once (RateLimited,
// with the wait as RetryAfter); without the cap both wait their second.
func TestWaitInPlaceCap(t *testing.T) {
	for _, capped := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			if capped {
				ctx = portico.ContextWithMaxWait(ctx, 100*time.Millisecond)
			}
			l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 4}})
			m := l.Wrap(slowModel(time.Second, 1))
			var wg sync.WaitGroup
			wg.Go(func() { m.Generate(context.Background(), req("a", 1)) })
			synctest.Wait() // the one slot is taken for a second
			start := time.Now()
			_, err := m.Generate(ctx, req("a", 1))
			took := time.Since(start)
			wg.Wait()
			var pe *portico.Error
			switch {
			case capped && (!errors.As(err, &pe) || pe.Class != portico.Rejected || !pe.NotSent || took != 100*time.Millisecond):
				t.Errorf("queued under a 100 ms cap: %v after %v; want Rejected, not sent, at 100ms", err, took)
			case !capped && (err != nil || took != 2*time.Second):
				t.Errorf("queued without a cap: %v after %v; want the answer at 2s (a second queued, a second called)", err, took)
			}

			w := mustNew(t, Config{Limits: Limits{Requests: 1, Period: time.Second}, Mode: Wait})
			wm := w.Wrap(okModel(1, 1))
			wm.Generate(context.Background(), req("a", 1)) // takes the second's one request
			start = time.Now()
			_, err = wm.Generate(ctx, req("a", 1))
			took = time.Since(start)
			switch {
			case capped && (!errors.As(err, &pe) || pe.Class != portico.RateLimited || pe.RetryAfter != time.Second || took != 0):
				t.Errorf("bucket wait under a 100 ms cap: %v after %v; want RateLimited, RetryAfter 1s, at once", err, took)
			case !capped && (err != nil || took != time.Second):
				t.Errorf("bucket wait without a cap: %v after %v; want the answer after 1s", err, took)
			}
		})
	}
}
