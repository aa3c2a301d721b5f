package retry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
)

// Hedges charged to the retry budget keep its bound: attempts to a
// destination <= requests * (1 + Ratio) + Burst, whatever fails. A Hedger
// over the Retrier (as stack's Route.Hedge builds it) takes one token per
// hedge with Take, and the hedge's own call through the Retrier
// (Request.Hedge) deposits nothing, as it is no new request. Through an
// outage (503 in 50 ms, a hedge after 10 ms) 1,000 requests make 1,109
// attempts, within the bound of 1,110, and leave 0.9 tokens that no retry
// can take; when each hedge deposited Ratio as a new request, they made
// 1,121, and the excess grew with the requests (Ratio/(1-Ratio) spent).
func TestHedgesKeepTheBudgetBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := retry.MustNew(retry.Config{Destination: "a"})
		down := modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 50 * time.Millisecond})
		m := hedge.MustNew(hedge.Config{Delay: 10 * time.Millisecond, Budget: r, Destination: "a"}).Wrap(r.Wrap(down))
		req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Identity: portico.Identity{ClientKey: "c"}}
		const n = 1000
		for range n {
			m.Generate(context.Background(), req)
		}
		bound := n*(1+retry.DefaultBudgetRatio) + retry.DefaultBudgetBurst
		if got, lv := down.Count(), r.BudgetLevel("a", "c"); got != 1109 || lv != 0.9 {
			t.Errorf("%d requests made %d attempts (bound %v), budget left %v; want 1109 and 0.9", n, got, bound, lv)
		}
	})
}
