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

// signs is a streamed Model that runs each sign after its delay, unless
// its context ends first, and then answers text.
func signs(text string, s ...sign) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		for _, st := range s {
			select {
			case <-ctx.Done():
				return nil, portico.FromContext(ctx)
			case <-time.After(st.after):
			}
			if st.chunk == "" {
				portico.Progress(ctx, portico.Chunk{})
			} else if err := req.OnChunk(portico.Chunk{Text: st.chunk}); err != nil {
				return nil, err
			}
		}
		if text == "" { // falls silent
			<-ctx.Done()
			return nil, portico.FromContext(ctx)
		}
		return &portico.Response{Text: text, FinishReason: portico.FinishStop}, nil
	})
}

// sign is a sign of progress after a delay: a chunk of text, or a
// progress report when chunk is empty.
type sign struct {
	after time.Duration
	chunk string
}

// TestStreamShareBoundsProgressGaps: a streamed request's share, while
// another candidate follows, bounds the gap between the primary's signs
// of progress, re-armed at each, before and after a chunk reached the
// caller. Under a 4 s deadline (share 2.25 s): a primary that reports
// progress at 1 s and falls silent is cut at 3.25 s, an unanswered cut,
// and the secondary answers; one that delivers a chunk at 1 s and falls
// silent is cut at 3.25 s too, and the request fails (the caller has
// text: the group cannot fall back) with the same unanswered cut, which
// the route's breaker counts; one whose signs of progress never stop for
// 2.25 s, a chunk, progress, a chunk, answers whole at 3.5 s. Before, one
// sign of life lifted the bound: the first two ran to 3.75 s and failed,
// with a cut of the caller's deadline no breaker counts.
func TestStreamShareBoundsProgressGaps(t *testing.T) {
	for _, c := range []struct {
		name     string
		primary  portico.Model
		route    string // "" when the request fails
		text     string // answered, or streamed before the failure
		took     time.Duration
		fellBack int
	}{
		{"progress then silent", signs("", sign{time.Second, ""}), "secondary", "ok", 3250 * time.Millisecond, 1},
		{"chunk then silent", signs("", sign{time.Second, "a"}), "", "a", 3250 * time.Millisecond, 0},
		{"live past the share", signs("a b", sign{time.Second, "a "}, sign{1500 * time.Millisecond, ""}, sign{time.Second, "b"}), "primary", "a b", 3500 * time.Millisecond, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				second := modeltest.NewFake(modeltest.Answer("ok"))
				g := MustNew(Config{Routes: []portico.Route{{Name: "primary", Model: c.primary}, {Name: "secondary", Model: second}}})
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
				defer cancel()
				req := simple.Clone()
				var got strings.Builder
				req.OnChunk = func(ch portico.Chunk) error { got.WriteString(ch.Text); return nil }
				start := time.Now()
				resp, err := g.Generate(ctx, req)
				if took := time.Since(start); took != c.took || got.String() != c.text || second.Count() != c.fellBack {
					t.Errorf("after %v, %q streamed, secondary called %d times; want %v, %q, %d", took, got.String(), second.Count(), c.took, c.text, c.fellBack)
				}
				if c.route == "" {
					if err == nil || !errors.Is(err, portico.ErrUnanswered) || !errors.Is(err, ErrShareTimeout) {
						t.Fatalf("Generate = %+v, %v; want an unanswered share timeout", resp, err)
					}
					return
				}
				if err != nil || resp.Route != c.route || resp.Text != c.text {
					t.Fatalf("Generate = %+v, %v; want %s's %q", resp, err, c.route, c.text)
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

// TestNoAnswerPastTheCut: a primary that does not watch its context sends
// its first chunk after the gap bound cut it (3 s into a 4 s deadline,
// share 2.25 s). The chunk is refused with the cut's error, so no chunk
// reaches the caller after the cut, and the group moves on to the
// secondary, whether the primary stops at the refusal or answers anyway:
// never a success whose chunks the caller did not get. Before, the bound
// swallowed the chunks and the primary's answer was the request's, with
// nothing streamed.
func TestNoAnswerPastTheCut(t *testing.T) {
	for _, stop := range []bool{true, false} {
		name := "answers anyway"
		if stop {
			name = "stops at the refusal"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var refused error
				deaf := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
					time.Sleep(3 * time.Second)
					for _, w := range []string{"a ", "b ", "c"} {
						if err := req.OnChunk(portico.Chunk{Text: w}); err != nil {
							refused = err
							if stop {
								return nil, err
							}
						}
					}
					return &portico.Response{Text: "a b c", FinishReason: portico.FinishStop}, nil
				})
				g := MustNew(Config{Routes: []portico.Route{{Name: "primary", Model: deaf}, {Name: "secondary", Model: modeltest.NewFake(modeltest.Answer("ok"))}}})
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
				defer cancel()
				req := simple.Clone()
				var got strings.Builder
				req.OnChunk = func(ch portico.Chunk) error { got.WriteString(ch.Text); return nil }
				resp, err := g.Generate(ctx, req)
				if err != nil || resp.Route != "secondary" || resp.Text != "ok" || got.String() != "ok" {
					t.Fatalf("Generate = %+v, %v, %q streamed; want the secondary's \"ok\", streamed", resp, err, got.String())
				}
				if h := resp.Hops; len(h) != 1 || !errors.Is(h[0].Err, portico.ErrUnanswered) {
					t.Errorf("hops = %v, want the primary's unanswered cut", h)
				}
				if portico.ClassOf(refused) != portico.Ambiguous || !errors.Is(refused, portico.ErrUnanswered) {
					t.Errorf("OnChunk after the cut = %v, want the cut's Ambiguous unanswered error", refused)
				}
			})
		})
	}
}

// TestSlowCallerIsNoGap: the time the caller's OnChunk holds a chunk (a
// slow client) is not the route's gap. Under a 4 s deadline (share
// 2.25 s) the caller holds the primary's first chunk, at 500 ms, for 3 s;
// the primary's second chunk comes 100 ms after the caller took the first
// back, and it answers whole at 3.6 s.
func TestSlowCallerIsNoGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary := signs("a b", sign{500 * time.Millisecond, "a "}, sign{100 * time.Millisecond, "b"})
		g := MustNew(Config{Routes: []portico.Route{{Name: "primary", Model: primary}, {Name: "secondary", Model: modeltest.NewFake(modeltest.Answer("ok"))}}})
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		req := simple.Clone()
		var got strings.Builder
		req.OnChunk = func(ch portico.Chunk) error {
			if got.Len() == 0 {
				time.Sleep(3 * time.Second)
			}
			got.WriteString(ch.Text)
			return nil
		}
		start := time.Now()
		resp, err := g.Generate(ctx, req)
		if err != nil || resp.Route != "primary" || resp.Text != "a b" || got.String() != "a b" || time.Since(start) != 3600*time.Millisecond {
			t.Fatalf("Generate = %+v, %v after %v, %q streamed; want the primary's \"a b\" after 3.6s", resp, err, time.Since(start), got.String())
		}
	})
}
