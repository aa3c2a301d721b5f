package gemini_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/gemini"
)

// TestStreamEventsAreProgress: a streamed chunk that reaches no OnChunk (a
// thought, usage alone) is reported as progress (portico.Progress), so
// that a layer bounding a stream's time to its first sign of life sees a
// model that thinks before it writes; a text chunk reaches OnChunk, and is
// not reported twice.
func TestStreamEventsAreProgress(t *testing.T) {
	m := raw(t, gemini.Config{}, reply(true,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"considering","thought":true}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP","index":0}]}`,
		`{"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4}}`))
	var progress atomic.Int32
	ctx := portico.ContextWithProgress(context.Background(), func(portico.Chunk) { progress.Add(1) })
	req := userReq("m", "hi")
	var chunks []string
	req.OnChunk = func(c portico.Chunk) error { chunks = append(chunks, c.Text); return nil }
	resp, err := m.Generate(ctx, req)
	if err != nil || resp.Text != "hi" || len(chunks) != 1 || progress.Load() != 2 {
		t.Fatalf("Generate = %+v, %v, chunks %q, %d progress reports; want hi, one chunk, 2 reports", resp, err, chunks, progress.Load())
	}
}
