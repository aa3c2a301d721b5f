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
// text delta reaches OnChunk, and is not reported twice. A ping is a
// keep-alive, never progress: the SDK keeps "event: ping" to itself, and
// the adapter does not report a ping's data under another event name
// (which the SDK passes on).
func TestStreamEventsAreProgress(t *testing.T) {
	m := raw(t, anthropic.Config{Model: "m"}, sse(evStart, "ping\n{\"type\":\"ping\"}", "message\n{\"type\":\"ping\"}", textStart, textDelta(0, "hi"), msgDelta("end_turn", 1), evStop))
	var progress atomic.Int32
	ctx := portico.ContextWithProgress(context.Background(), func(portico.Chunk) { progress.Add(1) })
	resp, chunks, err := stream(t, m, ctx)
	if err != nil || resp.Text != "hi" || len(chunks) != 1 || progress.Load() != 4 {
		t.Fatalf("Generate = %+v, %v, chunks %q, %d progress reports; want hi, one chunk, 4 reports", resp, err, chunks, progress.Load())
	}
}

// TestThinkingEventsAreProgress: each event of extended thinking as the
// API streams it (docs.anthropic.com, build-with-claude/extended-thinking,
// "Streaming thinking": a "thinking" block's start, thinking_delta and
// signature_delta events, its stop; a "redacted_thinking" block, whole in
// its start, and its stop) is reported as progress, and none reaches
// OnChunk: 11 reports, one per event but the text delta, which is the
// caller's one chunk.
func TestThinkingEventsAreProgress(t *testing.T) {
	m := raw(t, anthropic.Config{Model: "m"}, sse(evStart,
		blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
		blockDelta(0, `{"type":"thinking_delta","thinking":"Let me think."}`),
		blockDelta(0, `{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}`),
		blockStop(0),
		blockStart(1, `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}`),
		blockStop(1),
		blockStart(2, `{"type":"text","text":""}`), textDelta(2, "hi"), blockStop(2), msgDelta("end_turn", 1), evStop))
	var progress atomic.Int32
	ctx := portico.ContextWithProgress(context.Background(), func(portico.Chunk) { progress.Add(1) })
	resp, chunks, err := stream(t, m, ctx)
	if err != nil || resp.Text != "hi" || len(chunks) != 1 || chunks[0] != "hi" || progress.Load() != 11 {
		t.Fatalf("Generate = %+v, %v, chunks %q, %d progress reports; want hi, one chunk hi, 11 reports", resp, err, chunks, progress.Load())
	}
}
