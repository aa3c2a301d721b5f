package fallback

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// TestNotSentShareTimeoutCostsNothing: the primary's local limiter holds
// the call in its queue (stack Route.Limiter.Queue) until the primary's share of
// the deadline ends, and returns what ratelimit returns then: the layer
// timeout's Ambiguous error with NotSent, nothing sent, nothing billed. A
// contract's MaxCost allows one call at its estimate, not two: the
// secondary must answer. The group charged the unsent call its estimate
// (charge counts every Ambiguous failure as likely billed) and skipped
// the secondary for "budget".
func TestNotSentShareTimeoutCostsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		caps := portico.Capabilities{InputPrice: 1, OutputPrice: 1}
		queued := portico.ModelFunc(func(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
			<-ctx.Done() // waiting for a slot in the limiter's queue
			err := portico.FromContext(ctx).(*portico.Error)
			err.NotSent = true
			return nil, err
		})
		b := modeltest.NewFake(modeltest.Answer("fine"))
		req := &portico.Request{Messages: simple.Messages, MaxOutputTokens: 100}
		est := caps.EstimateCost(req, portico.DefaultEstimator.EstimateInputTokens(req))
		req.Contract = &portico.Contract{MaxCost: 1.5 * est}
		g := MustNew(Config{Routes: []portico.Route{
			{Name: "a", Model: queued, Capabilities: caps},
			{Name: "b", Model: b, Capabilities: caps},
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := g.Generate(ctx, req)
		if err != nil || resp.Route != "b" {
			t.Fatalf("Generate = %+v, %v; want b's answer after a's unsent call", resp, err)
		}
		if len(resp.Hops) != 1 || resp.Hops[0].Reason != "timeout" || resp.Cost != caps.Cost(resp.Usage) {
			t.Errorf("Hops %+v, Cost %v; want a's timeout alone, b's %v alone", resp.Hops, resp.Cost, caps.Cost(resp.Usage))
		}
	})
}
