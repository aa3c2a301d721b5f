package fallback

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/rank"
)

// TestShortShareNotAFaultForPolicy: TestShortShareNotAFault with a Policy.
// A cut of a share shorter than FaultAfter is the caller's short deadline,
// not the route's fault (portico.ErrDeadlineCut; breakers and throttles
// ignore it), but learn hands it to the statistics as a route fault: one
// tenant's 400 ms deadlines drive a healthy primary's ErrorRate to 1 and
// its SinceFailure to 0, and rank.ByHealth then sends every tenant's
// requests to the secondary first.
func TestShortShareNotAFaultForPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "slow", FinishReason: portico.FinishStop}, Latency: 400 * time.Millisecond})
		g := MustNew(Config{Policy: rank.ByHealth, Routes: []portico.Route{
			{Name: "primary", Model: slow},
			{Name: "secondary", Model: modeltest.NewFake()},
		}})
		for range 10 {
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			g.Generate(ctx, simple)
			cancel()
		}
		if c := figures(g, 0); c.ErrorRate != 0 || c.SinceFailure >= 0 {
			t.Errorf("primary after 10 short shares: ErrorRate %v, SinceFailure %v; want 0 and none", c.ErrorRate, c.SinceFailure)
		}
	})
}
