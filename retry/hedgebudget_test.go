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
// hedge with Take, but the hedge's own call through the Retrier then
// deposits Ratio as a new request does, so each hedge refunds a tenth of
// its token: through an outage (503 in 50 ms, a hedge after 10 ms) 1,000
// requests make 1,121 attempts where the bound is 1,110, and the excess
// grows with the requests (hedges and retries spend Ratio/(1-Ratio), not
// Ratio). A hedge is not a new request: its call should deposit nothing.
func TestHedgesKeepTheBudgetBound(t *testing.T) {
	t.Skip("bug: a hedge's call through the Retrier deposits Ratio as a new request, so hedges break the budget's attempt bound")
	synctest.Test(t, func(t *testing.T) {
		r := retry.MustNew(retry.Config{Destination: "a"})
		down := modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 50 * time.Millisecond})
		m := hedge.MustNew(hedge.Config{Delay: 10 * time.Millisecond, Budget: r, Destination: "a"}).Wrap(r.Wrap(down))
		req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Identity: portico.Identity{ClientKey: "c"}}
		const n = 1000
		for range n {
			m.Generate(context.Background(), req)
		}
		if bound := n*(1+retry.DefaultBudgetRatio) + retry.DefaultBudgetBurst; float64(down.Count()) > bound {
			t.Errorf("%d requests made %d attempts, want at most %v", n, down.Count(), bound)
		}
	})
}
