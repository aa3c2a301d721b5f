package anthropic_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/anthropic"
)

// TestStreamEventsAreProgress: every event of a stream the SDK hands over
// that reaches no OnChunk (message_start, a text block's empty start, the
// message's delta and stop; a thinking block's deltas) is reported as
// progress (portico.Progress), so that a layer bounding a stream's time to
// its first sign of life sees a model that thinks before it writes; the
// text delta reaches OnChunk, and is not reported twice. (The SDK keeps
// ping events to itself.)
func TestStreamEventsAreProgress(t *testing.T) {
	m := raw(t, anthropic.Config{Model: "m"}, sse(evStart, "ping\n{\"type\":\"ping\"}", textStart, textDelta(0, "hi"), msgDelta("end_turn", 1), evStop))
	var progress atomic.Int32
	ctx := portico.ContextWithProgress(context.Background(), func(portico.Chunk) { progress.Add(1) })
	resp, chunks, err := stream(t, m, ctx)
	if err != nil || resp.Text != "hi" || len(chunks) != 1 || progress.Load() != 4 {
		t.Fatalf("Generate = %+v, %v, chunks %q, %d progress reports; want hi, one chunk, 4 reports", resp, err, chunks, progress.Load())
	}
}
