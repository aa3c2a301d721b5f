package hedge_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

// TestHedgeDelayJudgesProgress: the hedge delay (1 s) judges any progress
// of a stream, not only chunks that reached the caller. A model that
// reasons for 5 s, reporting each reasoning step every 250 ms as progress
// ([portico.Progress], as the adapters report reasoning the caller did not
// ask to see), before its text, is not hedged: one call, the answer at
// 5 s. The same model silent for those 5 s is hedged at 1 s: two calls.
func TestHedgeDelayJudgesProgress(t *testing.T) {
	for _, reasons := range []bool{true, false} {
		t.Run(map[bool]string{true: "reasoning", false: "silent"}[reasons], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				base := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
					calls.Add(1)
					for range 20 {
						if reasons {
							portico.Progress(ctx, portico.Chunk{Reasoning: "step. "})
						}
						select {
						case <-time.After(250 * time.Millisecond):
						case <-ctx.Done():
							return nil, portico.FromContext(ctx)
						}
					}
					if err := req.OnChunk(portico.Chunk{Text: "answer"}); err != nil {
						return nil, err
					}
					return &portico.Response{Text: "answer", FinishReason: portico.FinishStop}, nil
				})
				m := hedge.MustNew(hedge.Config{Delay: time.Second}).Wrap(base)
				req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, OnChunk: func(portico.Chunk) error { return nil }}
				t0 := time.Now()
				resp, err := m.Generate(t.Context(), req)
				want := int32(1)
				if !reasons {
					want = 2
				}
				if err != nil || resp.Text != "answer" || calls.Load() != want || time.Since(t0) != 5*time.Second {
					t.Fatalf("Generate = %+v, %v after %v, %d calls; want the answer after 5s, %d call(s)", resp, err, time.Since(t0), calls.Load(), want)
				}
			})
		})
	}
}
