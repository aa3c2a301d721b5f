package retry

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestSlowConsumerIsNotAChunkGap: a provider that streams its chunks back
// to back (no gap at all), and a caller whose OnChunk takes longer than
// Timeouts.ChunkGap (it writes each chunk to a slow client connection, a
// mobile user, say). The watchdog stamps a chunk's time before the caller's
// OnChunk runs, so the time the caller spends in it counts as the provider's
// gap: the attempt fails with ErrChunkGapTimeout, class Ambiguous, a route
// fault, so the route's breaker counts it, and a few slow consumers of one
// tenant open the route's breaker for every tenant (with package stack's
// order, five in a row). The error also blames the provider ("chunk gap
// timeout"). The gap is the provider's only while the caller is not
// holding the stream.
func TestSlowConsumerIsNotAChunkGap(t *testing.T) {
	t.Skip("bug: the time a caller's OnChunk takes counts as the provider's chunk gap (ErrChunkGapTimeout, a route fault); see the report")
	synctest.Test(t, func(t *testing.T) {
		m := streamer(plan{chunks: []string{"a ", "b ", "c"}})
		r, err := New(Config{Timeouts: Timeouts{ChunkGap: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		req := &portico.Request{
			Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")},
			OnChunk:  func(portico.Chunk) error { time.Sleep(150 * time.Millisecond); return nil },
		}
		resp, err := r.Wrap(m).Generate(context.Background(), req)
		if err != nil || resp.Text != "a b c" {
			t.Fatalf("Generate with a slow OnChunk over a gapless stream = %+v, %v; want the answer", resp, err)
		}
	})
}
