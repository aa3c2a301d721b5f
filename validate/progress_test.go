package validate

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
)

// While it buffers, the wrapped Model reports every chunk it holds back with
// portico.Progress, so that a retry layer outside it sees a live stream; with
// PassThroughChunks the chunks reach the caller themselves and Progress is not
// called.
func TestBufferedChunksReportProgress(t *testing.T) {
	const good = `{"name":"x","age":1,"role":"user"}`
	for _, tc := range []struct {
		name         string
		passThrough  bool
		wantProgress int64
		wantChunks   int
	}{
		{"buffered", false, 2, 1},
		{"pass-through", true, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inner bool
			m := MustNew(Config{PassThroughChunks: tc.passThrough}).Wrap(streamer(good, &inner))
			var progress atomic.Int64
			ctx := portico.ContextWithProgress(context.Background(), func(portico.Chunk) { progress.Add(1) })
			chunks := 0
			req := schemaReq(personSchema)
			req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
			if _, err := m.Generate(ctx, req); err != nil {
				t.Fatalf("Generate = %v, want the answer", err)
			}
			if got := progress.Load(); got != tc.wantProgress || chunks != tc.wantChunks {
				t.Errorf("progress calls = %d, caller's chunks = %d; want %d and %d", got, chunks, tc.wantProgress, tc.wantChunks)
			}
		})
	}
}
