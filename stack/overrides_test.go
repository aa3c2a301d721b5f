package stack

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/retry"
)

// TestPresetOverridesFirstChunk: a reasoning request asks its route for
// a longer first-chunk timeout than the route's 2 s, within the 1 min its
// Retry.Bounds allow, and is answered after 20 s of thought on the same
// route; the same request without the override is cut at 2 s on each of
// its 3 attempts.
func TestPresetOverridesFirstChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		thinker := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			select {
			case <-time.After(20 * time.Second):
			case <-ctx.Done():
				return nil, portico.FromContext(ctx)
			}
			if err := req.OnChunk(portico.Chunk{Text: "42"}); err != nil {
				return nil, err
			}
			return &portico.Response{Text: "42", FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 1, OutputTokens: 1}}, nil
		})
		r := route("r", thinker)
		r.Retry = retry.Config{Timeouts: retry.Timeouts{FirstChunk: 2 * time.Second}, Bounds: retry.Bounds{FirstChunk: retry.Range{Max: time.Minute}},
			Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}}
		s, err := New(Config{Routes: []Route{r}})
		if err != nil {
			t.Fatal(err)
		}
		req := hello.Clone()
		req.OnChunk = func(portico.Chunk) error { return nil }
		start := time.Now()
		if _, err := s.Generate(t.Context(), req); !errors.Is(err, retry.ErrFirstChunkTimeout) {
			t.Errorf("without the override: %v after %v, want a first-chunk timeout", err, time.Since(start))
		}
		req.Overrides = &portico.Overrides{FirstChunk: 30 * time.Second}
		start = time.Now()
		resp, err := s.Generate(t.Context(), req)
		if err != nil || resp.Text != "42" || time.Since(start) != 20*time.Second {
			t.Errorf("with FirstChunk 30 s: %v, %v after %v; want 42 after 20s", resp, err, time.Since(start))
		}
	})
}
