package stack

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// Through the preset, the adaptive cap of a route judges its calls as its
// breaker does. A tenant whose 1 s deadlines are shorter than the
// primary's 2 s answers is cut by the group's share (ErrDeadlineCut, well
// short of FaultAfter): the primary's limit stays at 20. A hung primary
// under 20 s deadlines runs out shares of 11.25 s, past FaultAfter, which
// are its fault: AIMD's limit falls, from 20 to 14 after 30 requests.
func TestPresetConcurrencyJudgesCutsAsBreakers(t *testing.T) {
	for _, c := range []struct {
		name     string
		primary  modeltest.Outcome
		deadline time.Duration
		want     int
	}{
		{"short deadlines", modeltest.Outcome{Response: modeltest.Answer("a").Response, Latency: 2 * time.Second}, time.Second, adaptive.DefaultInitial},
		{"hung primary", modeltest.Outcome{Stall: true}, 20 * time.Second, 14},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := route("a", modeltest.NewFake(c.primary))
				a.Skip |= SkipBreaker // the adaptive cap alone
				lim := adaptiveLimit(t, adaptive.Config{Algorithm: adaptive.AIMD{}})
				a.Limiter = &ratelimit.Config{Concurrency: lim}
				s, err := New(Config{Routes: []Route{a, route("b", modeltest.NewFake(modeltest.Answer("b")))}, Deadline: c.deadline})
				if err != nil {
					t.Fatal(err)
				}
				for range 30 {
					s.Generate(context.Background(), hello)
				}
				if got := lim.Limit(); got != c.want {
					t.Errorf("a's Concurrency Limit() after 30 requests = %d, want %d", got, c.want)
				}
			})
		})
	}
}
