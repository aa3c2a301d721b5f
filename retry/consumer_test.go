package retry

import (
	"context"
	"strings"
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

// TestSlowConsumerIsNotASlowStream: the same for the rate floor. A provider
// that streams one-token chunks back to back, and a caller whose OnChunk
// takes a second a chunk: one token a second reaches the caller, under a
// floor of 5 tokens/s over 5 s, but the provider is not slow, so the answer
// arrives whole, in the 12 s the caller took.
func TestSlowConsumerIsNotASlowStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := streamer(plan{chunks: repeat("a", 12)})
		r, err := New(Config{Timeouts: Timeouts{MinRate: 5, RateWindow: 5 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		req := &portico.Request{
			Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")},
			OnChunk:  func(portico.Chunk) error { time.Sleep(time.Second); return nil },
		}
		start := time.Now()
		resp, err := r.Wrap(m).Generate(context.Background(), req)
		if err != nil || resp.Text != strings.Repeat("a", 12) || time.Since(start) != 12*time.Second {
			t.Fatalf("Generate with a slow OnChunk over a fast stream = %+v, %v after %v; want the answer after 12s", resp, err, time.Since(start))
		}
	})
}
