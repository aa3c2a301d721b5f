package stack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
)

// TestPresetCutsAHungPrimary: the preset with its defaults (no breaker,
// retry or fallback setting) over a primary that never answers and a
// healthy secondary, 20 requests one after the other, at deadlines of
// 1 s, 10 s, 2 min and 10 min, plain and streamed. Each of the first five
// waits out the primary's share (9/16 of the deadline: 562.5 ms, 5.625 s,
// 67.5 s, 5 min 37.5 s) and is answered by the secondary; the fifth cut
// opens the primary's breaker (five in a row: at 1 s and 10 s unanswered
// cuts, portico.ErrUnanswered, in the run of consecutive failures; at 2 and
// 10 min failures, the share being past fallback.DefaultFaultAfter), and
// the 15 others skip it. Before unanswered cuts counted, the 1 s and 10 s
// deadlines left the breaker closed and the hung primary was called on all
// 20 requests, each waiting its share.
func TestPresetCutsAHungPrimary(t *testing.T) {
	for _, c := range []struct {
		deadline, share time.Duration
	}{{time.Second, 562500 * time.Microsecond}, {10 * time.Second, 5625 * time.Millisecond}, {2 * time.Minute, 67500 * time.Millisecond}, {10 * time.Minute, 337500 * time.Millisecond}} {
		for _, stream := range []bool{false, true} {
			name := c.deadline.String()
			if stream {
				name += " streamed"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					hung := modeltest.NewFake(modeltest.Outcome{Stall: true})
					healthy := modeltest.NewFake(modeltest.Answer("fine"))
					s, err := New(Config{Routes: []Route{route("a", hung), route("b", healthy)}, Deadline: c.deadline})
					if err != nil {
						t.Fatal(err)
					}
					req := hello
					if stream {
						req = hello.Clone()
						req.OnChunk = func(portico.Chunk) error { return nil }
					}
					var took []time.Duration
					answered, opened := 0, -1
					var openedAt time.Duration
					start := time.Now()
					for i := range 20 {
						t0 := time.Now()
						resp, err := s.Generate(context.Background(), req)
						took = append(took, time.Since(t0))
						if err == nil && resp.Route == "b" {
							answered++
						}
						if opened < 0 && s.Breaker("a").State() == breaker.Open {
							opened, openedAt = i+1, time.Since(start)
						}
					}
					sorted := slices.Sorted(slices.Values(took))
					p50, most := sorted[len(sorted)/2], sorted[len(sorted)-1]
					t.Logf("deadline %v: %d of 20 answered, latency p50 %v max %v, hung primary called %d times, breaker open after request %d (%v)",
						c.deadline, answered, p50, most, hung.Count(), opened, openedAt)
					if answered != 20 || p50 != 0 || most != c.share || hung.Count() != 5 || opened != 5 || openedAt != 5*c.share {
						t.Errorf("%d answered, p50 %v, max %v, %d calls to the hung primary, open after request %d at %v; want 20, 0s, %v, 5, 5 at %v",
							answered, p50, most, hung.Count(), opened, openedAt, c.share, 5*c.share)
					}
				})
			})
		}
	}
}

// TestPresetDoesNotCutALiveStream: the preset with its defaults over a
// primary that streams slowly but lives, and a secondary. The primary's
// share of the deadline bounds only the gaps between a stream's signs of
// progress (a chunk, or a report of progress: an event that is not text,
// a reasoning model's), so a live stream runs to the end of the caller's
// deadline: a 100-chunk answer at a chunk a second under 2 min, a model
// that reports progress every 10 s while it thinks for 80 s under 2 min,
// one that thinks for 8 s after its first chunk under 10 s, reporting
// progress every 2 s, one whose first chunk comes after 3 s and its last
// after 9 s under 10 s, are answered whole by the primary, its breaker
// closed and the secondary never called. Before, the share (67.5 s, 5.625 s) cut each of them: the
// first two mid-answer, the thinking one before its text, which the
// breaker counted as a failure.
func TestPresetDoesNotCutALiveStream(t *testing.T) {
	words := make([]string, 100)
	for i := range words {
		words[i] = "w "
	}
	thinking := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		for range 8 {
			select {
			case <-ctx.Done():
				return nil, portico.FromContext(ctx)
			case <-time.After(10 * time.Second):
			}
			portico.Progress(ctx, portico.Chunk{}) // what an adapter reports of an event that is not text
		}
		if err := req.OnChunk(portico.Chunk{Text: "thought"}); err != nil {
			return nil, err
		}
		return &portico.Response{Text: "thought", FinishReason: portico.FinishStop}, nil
	})
	// A chunk at 1 s, then progress every 2 s while it thinks, and its
	// last chunk at 9.5 s: the share bounds each gap, not the thinking.
	thinksAfter := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		for i, d := range []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 500 * time.Millisecond} {
			select {
			case <-ctx.Done():
				return nil, portico.FromContext(ctx)
			case <-time.After(d):
			}
			switch i {
			case 0:
				req.OnChunk(portico.Chunk{Text: "a "})
			case 5:
				req.OnChunk(portico.Chunk{Text: "b"})
			default:
				portico.Progress(ctx, portico.Chunk{})
			}
		}
		return &portico.Response{Text: "a b", FinishReason: portico.FinishStop}, nil
	})
	for _, c := range []struct {
		name     string
		primary  portico.Model
		deadline time.Duration
		text     string
		took     time.Duration
	}{
		{"long answer", modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: strings.Repeat("w ", 100), FinishReason: portico.FinishStop}, Chunks: words, TTFT: time.Second, ChunkGap: time.Second}), 2 * time.Minute, strings.Repeat("w ", 100), 100 * time.Second},
		{"thinking", thinking, 2 * time.Minute, "thought", 80 * time.Second},
		{"thinks after its first chunk", thinksAfter, 10 * time.Second, "a b", 9500 * time.Millisecond},
		{"slow first chunk", modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "a b c d", FinishReason: portico.FinishStop}, Chunks: []string{"a ", "b ", "c ", "d"}, TTFT: 3 * time.Second, ChunkGap: 2 * time.Second}), 10 * time.Second, "a b c d", 9 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				second := modeltest.NewFake(modeltest.Answer("fallback"))
				s, err := New(Config{Routes: []Route{route("a", c.primary), route("b", second)}, Deadline: c.deadline})
				if err != nil {
					t.Fatal(err)
				}
				req := hello.Clone()
				var got strings.Builder
				req.OnChunk = func(ch portico.Chunk) error { got.WriteString(ch.Text); return nil }
				start := time.Now()
				resp, err := s.Generate(context.Background(), req)
				if err != nil || resp.Route != "a" || resp.Text != c.text || got.String() != c.text || time.Since(start) != c.took {
					t.Fatalf("Generate = %+v, %v after %v, %q streamed; want a's whole answer after %v", resp, err, time.Since(start), got.String(), c.took)
				}
				if st := s.Breaker("a").State(); st != breaker.Closed || second.Count() != 0 {
					t.Errorf("primary breaker %v, secondary calls %d; want closed, 0", st, second.Count())
				}
			})
		})
	}
}
