package stack

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

// TestUpdateHedgerPricesWithNewCapabilities: a same-route hedger prices
// its attempts with the route's Capabilities (hedge.Config.Cost), so an
// Update that changes them builds it afresh, even when the route has no
// retrier to tell the two Configs apart. At an output price of 1 an
// attempt of 16 tokens costs 16 and a hedge fits MaxCost 48 (32); at 2 it
// costs 32 and a hedge (64) does not: the slow attempt answers.
func TestUpdateHedgerPricesWithNewCapabilities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		priced := func(price float64) Route {
			r := route("a", slowThenFast())
			r.Skip = SkipRetry
			r.Hedge = &hedge.Config{Delay: 100 * ms}
			r.Capabilities.OutputPrice = price
			return r
		}
		req := *idem
		req.Contract = &portico.Contract{MaxCost: 48}
		s, err := New(Config{Routes: []Route{priced(1)}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			price float64
			text  string
			after time.Duration
		}{{1, "fast", 1100 * ms}, {2, "slow", 10 * time.Second}} {
			mustUpdate(t, s, Config{Routes: []Route{priced(tc.price)}})
			start := time.Now()
			resp, err := s.Generate(context.Background(), &req)
			if err != nil || resp.Text != tc.text || time.Since(start) != tc.after {
				t.Errorf("price %v: Generate = %v, %v after %v, want %q after %v", tc.price, resp, err, time.Since(start), tc.text, tc.after)
			}
		}
	})
}
