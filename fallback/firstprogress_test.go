package fallback

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// TestStreamShareBoundsFirstProgress: a streamed request's share, while
// another candidate follows, bounds the primary's time to its first
// progress, not the whole answer. Under a 4 s deadline (share 2.25 s):
// a primary silent past its share is cut then, an unanswered cut, and the
// secondary answers; one whose first chunk comes at 1 s streams on to 3 s
// and answers whole; one that reports progress at 2 s (portico.Progress:
// a chunk held back, an event that is not text) and streams its text from
// 3 s answers whole too. Before, the share cut the last two at 2.25 s.
func TestStreamShareBoundsFirstProgress(t *testing.T) {
	late := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		for _, step := range []func(){
			func() { portico.Progress(ctx, portico.Chunk{}) },
			func() { req.OnChunk(portico.Chunk{Text: "late"}) },
		} {
			select {
			case <-ctx.Done():
				return nil, portico.FromContext(ctx)
			case <-time.After(time.Second + 500*time.Millisecond):
			}
			step()
		}
		return &portico.Response{Text: "late", FinishReason: portico.FinishStop}, nil
	})
	for _, c := range []struct {
		name    string
		primary portico.Model
		route   string
		text    string
		took    time.Duration
	}{
		{"silent", modeltest.NewFake(modeltest.Outcome{Stall: true}), "secondary", "ok", 2250 * time.Millisecond},
		{"chunk in time", modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "a b c", FinishReason: portico.FinishStop}, Chunks: []string{"a ", "b ", "c"}, TTFT: time.Second, ChunkGap: time.Second}), "primary", "a b c", 3 * time.Second},
		{"progress in time", late, "primary", "late", 3 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := MustNew(Config{Routes: []portico.Route{{Name: "primary", Model: c.primary}, {Name: "secondary", Model: modeltest.NewFake(modeltest.Answer("ok"))}}})
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
				defer cancel()
				req := simple.Clone()
				var got strings.Builder
				req.OnChunk = func(ch portico.Chunk) error { got.WriteString(ch.Text); return nil }
				start := time.Now()
				resp, err := g.Generate(ctx, req)
				if err != nil || resp.Route != c.route || resp.Text != c.text || time.Since(start) != c.took {
					t.Fatalf("Generate = %+v, %v after %v; want %s's %q after %v", resp, err, time.Since(start), c.route, c.text, c.took)
				}
				if c.route == "secondary" {
					if h := resp.Hops; len(h) != 1 || !errors.Is(h[0].Err, portico.ErrUnanswered) || !errors.Is(h[0].Err, ErrShareTimeout) {
						t.Errorf("hops = %v, want one unanswered share timeout", h)
					}
				}
			})
		})
	}
}
