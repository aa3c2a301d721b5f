package fallback

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

// A hedge respects Contract.MaxCost as a move-on does. Each route's call
// is estimated at 100 (100 output tokens at 1). With a MaxCost of 150, one
// call: the walk would not send a second call after an Ambiguous first one
// (its estimate counts as spent), and a hedge, sent while the first call
// runs, would make two calls likely billed (the loser is canceled after it
// was sent), up to twice the MaxCost; so none is sent and the primary
// answers. With 250 the hedge fits and wins.
func TestHedgeRespectsMaxCost(t *testing.T) {
	for _, c := range []struct {
		max    float64
		route  string
		hedges int
	}{{150, "a", 0}, {250, "b", 1}} {
		synctest.Test(t, func(t *testing.T) {
			caps := portico.Capabilities{OutputPrice: 1}
			a, b := named("a", after("a", 10*time.Second)), named("b", after("b", ms))
			a.Capabilities, b.Capabilities = caps, caps
			fb := b.Model.(interface{ Count() int })
			g := MustNew(Config{Routes: []portico.Route{a, b}, Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms})})
			req := idem.Clone()
			req.MaxOutputTokens = 100
			req.Contract = &portico.Contract{MaxCost: c.max}
			resp, err := g.Generate(context.Background(), req)
			if err != nil || resp.Route != c.route || fb.Count() != c.hedges {
				t.Errorf("MaxCost %v: Generate = %+v, %v with b called %d times; want %s's answer, b called %d times", c.max, resp, err, fb.Count(), c.route, c.hedges)
			}
		})
	}
}

// An attempt that answered too, just after the winner (both 10 output
// tokens at 1, ending at the same instant), was billed as the winner was:
// the answer's Cost counts both, as it counts a failed call's reported
// usage.
func TestHedgeLoserThatAnsweredIsCharged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		caps := portico.Capabilities{OutputPrice: 1}
		answer := func(name string, d time.Duration) portico.Route {
			r := named(name, modeltest.NewFake(modeltest.Outcome{Latency: d,
				Response: &portico.Response{Text: name, FinishReason: portico.FinishStop, Usage: portico.Usage{OutputTokens: 10}}}))
			r.Capabilities = caps
			return r
		}
		// b, hedged after 100 ms, answers at 200 ms as a does.
		g := MustNew(Config{Routes: []portico.Route{answer("a", 200*ms), answer("b", 100*ms)},
			Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms})})
		resp, err := g.Generate(context.Background(), idem)
		if err != nil || resp.Cost != 20 || hops(resp.Hops) == "" {
			t.Errorf("Generate = %+v, %v; want Cost 20 (both answers billed) and the loser's hop", resp, err)
		}
	})
}
