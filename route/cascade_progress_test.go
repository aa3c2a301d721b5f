package route

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
)

// A cascade holding a step's chunks back reports each with portico.Progress,
// so that a retry layer outside it sees a live stream; the live last step
// (StreamLast) delivers its chunks to the caller instead.
func TestCascadeBufferedChunksReportProgress(t *testing.T) {
	u := portico.Usage{InputTokens: 1}
	st := []Step{
		{Route: portico.Route{Name: "a", Model: answer("first draft", u, nil)}, Accept: acceptText("never"), Threshold: 1},
		{Route: portico.Route{Name: "b", Model: answer("final answer", u, nil)}},
	}
	for _, tc := range []struct {
		streamLast   bool
		wantProgress int64
	}{{false, 2}, {true, 1}} {
		c, _ := NewCascade(CascadeConfig{Steps: st, StreamLast: tc.streamLast})
		var progress atomic.Int64
		ctx := portico.ContextWithProgress(context.Background(), func(portico.Chunk) { progress.Add(1) })
		req := userReq("q")
		req.OnChunk = func(portico.Chunk) error { return nil }
		if _, err := c.Generate(ctx, req); err != nil {
			t.Fatalf("StreamLast %v: Generate = %v", tc.streamLast, err)
		}
		if got := progress.Load(); got != tc.wantProgress {
			t.Errorf("StreamLast %v: progress calls = %d, want %d (one per buffered chunk)", tc.streamLast, got, tc.wantProgress)
		}
	}
}
