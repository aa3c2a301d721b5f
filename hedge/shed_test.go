package hedge_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
)

// A hedge refused before anything was sent costs no retry token, as a
// refused retry takes none. With the route's limiter at its in-flight cap
// (an adaptive limit of 1, as stack's Route.Limiter and Route.Hedge
// build it), every hedge is shed at once with ErrOverloaded, yet Take
// already spent its token: 20 requests that never sent a hedge drain the
// client's retry budget from 10 to 0.9, and the tenant's next 503 cannot
// be retried. A hedge that ends Rejected or NotSent should give its token
// back (or be charged only once it is admitted).
func TestShedHedgeKeepsTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := retry.MustNew(retry.Config{Destination: "a"})
		lim, err := ratelimit.New(ratelimit.Config{Concurrency: adaptive.MustNew(adaptive.Config{Initial: 1, Max: 1}), Key: ratelimit.ByModel})
		if err != nil {
			t.Fatal(err)
		}
		f := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("ok").Response, Latency: 100 * time.Millisecond})
		m := hedge.MustNew(hedge.Config{Delay: 10 * time.Millisecond, Budget: r, Destination: "a"}).Wrap(lim.Wrap(r.Wrap(f)))
		rq := req.Clone()
		rq.Identity.ClientKey = "c"
		for range 20 {
			if _, err := m.Generate(context.Background(), rq); err != nil {
				t.Fatal(err)
			}
		}
		if got := r.BudgetLevel("a", "c"); f.Count() != 20 || got < retry.DefaultBudgetBurst {
			t.Errorf("20 requests, %d calls (no hedge admitted): retry budget %v, want %v (full)", f.Count(), got, float64(retry.DefaultBudgetBurst))
		}
	})
}
