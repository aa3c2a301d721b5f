package retry

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// DESIGN.md's invariant under concurrency, whatever fails: for every
// (destination, client key), attempts <= requests*(1+ratio) + burst. 16
// goroutines send 3200 requests over 4 client keys and 2 models, a third of
// them streamed and half with NoAmbiguousRetry, with Timeouts.Attempt and streaming
// timeouts set, to a model whose attempts fail with every retryable and
// non-retryable class (429 with a Retry-After hint, 503, ambiguous, invalid,
// permanent), hang past the attempt or first-chunk timeout, stall after a
// chunk, or answer. MaxAttempts 6 so that the budget, not the attempt count,
// is what binds. Waits are real backoffs in virtual time.
func TestBudgetInvariantConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			goroutines = 16
			perG       = 200
			ratio      = 0.1
			burst      = 10
		)
		rnd := lockedRand(11)
		type key struct{ model, client string }
		var mu sync.Mutex
		attempts := map[key]int{}
		requests := map[key]int{}
		inner := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			mu.Lock()
			attempts[key{req.Model, req.Identity.ClientKey}]++
			mu.Unlock()
			switch u := rnd(); {
			case u < 0.15:
				return nil, &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: 300 * time.Millisecond}
			case u < 0.35:
				return nil, transient()
			case u < 0.45:
				return nil, &portico.Error{Class: portico.Ambiguous}
			case u < 0.50:
				return nil, &portico.Error{Class: portico.InvalidResponse}
			case u < 0.55:
				return nil, &portico.Error{Class: portico.Permanent, Status: 400}
			case u < 0.65: // hangs past Timeouts.Attempt and FirstChunk
				<-ctx.Done()
				return nil, portico.FromContext(ctx)
			case u < 0.72 && req.OnChunk != nil: // one chunk, then a stall
				if err := req.OnChunk(portico.Chunk{Text: "a"}); err != nil {
					return nil, err
				}
				<-ctx.Done()
				return nil, portico.FromContext(ctx)
			}
			if req.OnChunk != nil {
				if err := req.OnChunk(portico.Chunk{Text: "ok"}); err != nil {
					return nil, err
				}
			}
			return okResp, nil
		})
		r := mustNew(t, Config{MaxAttempts: 6, RetryInvalidResponse: true, Budget: Budget{Ratio: ratio, Burst: burst}, Backoff: Backoff{BaseDelay: 10 * time.Millisecond, MaxDelay: 200 * time.Millisecond, Rand: lockedRand(12)}, Timeouts: Timeouts{Attempt: 2 * time.Second, FirstChunk: time.Second, ChunkGap: 500 * time.Millisecond}})
		m := r.Wrap(inner)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range perG {
					req := userReq.Clone()
					req.Model = []string{"m1", "m2"}[(g+i)%2]
					req.Identity.ClientKey = []string{"a", "b", "c", "d"}[(g*perG+i)%4]
					req.NoAmbiguousRetry = i%2 == 1
					if i%3 == 0 {
						req.OnChunk = func(portico.Chunk) error { return nil }
					}
					mu.Lock()
					requests[key{req.Model, req.Identity.ClientKey}]++
					mu.Unlock()
					resp, err := m.Generate(context.Background(), req)
					if (resp == nil) == (err == nil) {
						t.Errorf("Generate = %v, %v, want a response XOR an error", resp, err)
					}
				}
			})
		}
		wg.Wait()
		total, totalReq := 0, 0
		for k, n := range requests {
			a := attempts[k]
			total += a
			totalReq += n
			bound := float64(n)*(1+ratio) + burst
			t.Logf("%v: %d requests, %d attempts, bound %.1f", k, n, a, bound)
			if float64(a) > bound {
				t.Errorf("%v: attempts = %d over %d requests, want <= %.1f", k, a, n, bound)
			}
			if a <= n {
				t.Errorf("%v: attempts = %d over %d requests, want some retries", k, a, n)
			}
		}
		if totalReq != goroutines*perG || len(requests) != 8 {
			t.Errorf("requests = %d over %d keys, want %d over 8", totalReq, len(requests), goroutines*perG)
		}
	})
}
