package stack

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
)

// TestPresetCutsAStreamThatFallsSilent: the preset with its defaults over
// a primary that shows one sign of life 100 ms into each streamed request
// and then hangs, and a healthy secondary, 20 requests one after the
// other at deadlines of 1 s, 10 s and 2 min. The share (9/16 of the
// deadline) bounds the gap between signs of progress, so each of the first
// five is cut a share after its sign of life, and the fifth cut opens the
// primary's breaker (at 1 s and 10 s unanswered cuts, in its run of
// consecutive failures; at 2 min failures), after which the 15 others skip
// it. When the sign of life is a progress report (an event that is not
// text, a chunk a layer holds back) nothing reached the caller and the
// secondary answers all 20; when it is a chunk the caller got, the first
// five fail, the group cannot fall back once the caller has text, and the
// 15 others are answered. Before, one sign of life lifted the share to the
// whole deadline: at 10 s none of 20 was answered, the hung primary was
// called 20 times and its breaker stayed closed.
func TestPresetCutsAStreamThatFallsSilent(t *testing.T) {
	for _, c := range []struct {
		deadline, share time.Duration
	}{{time.Second, 562500 * time.Microsecond}, {10 * time.Second, 5625 * time.Millisecond}, {2 * time.Minute, 67500 * time.Millisecond}} {
		for _, delivered := range []bool{false, true} {
			name := c.deadline.String() + " progress"
			if delivered {
				name = c.deadline.String() + " chunk"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					calls := 0
					hung := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
						calls++
						time.Sleep(100 * time.Millisecond)
						if delivered {
							if err := req.OnChunk(portico.Chunk{Text: "x"}); err != nil {
								return nil, err
							}
						} else {
							portico.Progress(ctx, portico.Chunk{})
						}
						<-ctx.Done()
						return nil, portico.FromContext(ctx)
					})
					healthy := modeltest.NewFake(modeltest.Answer("fine"))
					s, err := New(Config{Routes: []Route{route("a", hung), route("b", healthy)}, Deadline: c.deadline})
					if err != nil {
						t.Fatal(err)
					}
					req := hello.Clone()
					req.OnChunk = func(portico.Chunk) error { return nil }
					answered, failed, opened := 0, 0, -1
					var openedAt, most time.Duration
					start := time.Now()
					for i := range 20 {
						t0 := time.Now()
						resp, err := s.Generate(context.Background(), req)
						most = max(most, time.Since(t0))
						switch {
						case err == nil && resp.Route == "b":
							answered++
						case err != nil && errors.Is(err, fallback.ErrShareTimeout):
							failed++
						default:
							t.Errorf("request %d: Generate = %+v, %v; want b's answer or a's share timeout", i+1, resp, err)
						}
						if opened < 0 && s.Breaker("a").State() == breaker.Open {
							opened, openedAt = i+1, time.Since(start)
						}
					}
					t.Logf("deadline %v, sign of life a chunk: %v: %d of 20 answered, %d failed after a chunk, hung primary called %d times, breaker open after request %d (%v), max latency %v",
						c.deadline, delivered, answered, failed, calls, opened, openedAt, most)
					wantAnswered, wantFailed := 20, 0
					if delivered {
						wantAnswered, wantFailed = 15, 5
					}
					each := 100*time.Millisecond + c.share
					if answered != wantAnswered || failed != wantFailed || calls != 5 || opened != 5 || openedAt != 5*each || most != each {
						t.Errorf("%d answered, %d failed, %d calls to the hung primary, open after request %d at %v, max latency %v; want %d, %d, 5, 5 at %v, %v",
							answered, failed, calls, opened, openedAt, most, wantAnswered, wantFailed, 5*each, each)
					}
				})
			})
		}
	}
}
