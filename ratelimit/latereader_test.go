package ratelimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// A streaming Model that returns when its context ends while its stream's
// goroutine still delivers a chunk (the case portico.StreamWatch's reports
// are atomic for): the reader's timing of that late OnChunk must not race
// with the Limiter reading it once Generate returned. Run with -race. The
// Concurrency is told the call's 50 ms, the late chunk left out.
func TestConcurrencyReaderLateChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &movingCap{}
		c.limit.Store(10)
		l := mustNew(t, Config{Concurrency: c})
		ended := make(chan struct{})
		late := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			go func() {
				defer close(ended)
				time.Sleep(100 * time.Millisecond) // the stream's reader, not watching ctx
				r.OnChunk(portico.Chunk{Text: "late"})
			}()
			<-ctx.Done()
			return nil, portico.FromContext(ctx)
		})
		r := req("a", 1)
		r.OnChunk = func(portico.Chunk) error { return nil }
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := l.Wrap(late).Generate(ctx, r); portico.ClassOf(err) != portico.Deadline {
			t.Fatalf("Generate = %v, want Deadline", err)
		}
		<-ended
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.done) != 1 || c.done[0].latency != 50*time.Millisecond {
			t.Errorf("Done = %+v, want one call of 50 ms", c.done)
		}
	})
}
