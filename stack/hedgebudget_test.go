package stack

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
)

// counted is a route over f with no breaker (the retry budget alone bounds
// it) that counts in news the calls that reach it as new requests, not
// hedges (Route.Middleware sees each route call once).
func counted(name string, f *modeltest.Fake, news *atomic.Int64) Route {
	r := route(name, f)
	r.Skip |= SkipBreaker
	r.Middleware = []portico.Middleware{func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			if !req.Hedge {
				news.Add(1)
			}
			return next.Generate(ctx, req)
		})
	}}
	return r
}

// Through the preset, hedges keep the retry budget's bound per route:
// attempts <= new requests * (1 + Ratio) + Burst, a hedge's call marked
// (Request.Hedge) so that the route's retry layer deposits nothing for it.
// Route.Hedge (a hedge after 10 ms) over a route down (503 in 50 ms) for
// 1,000 requests: 1,109 attempts, within the bound of 1,110 (1,121 when a
// hedge deposited as a new request). Config.Hedge over a primary down and
// a secondary that answers in 80 ms: the secondary wins 100 requests as a
// hedge and 900 as the walk's next route (new requests), and its 1,000
// attempts are the bound of 900 new requests (when a hedge deposited as a
// new request: 109 hedges and 891 new requests, whose bound is 990.1).
func TestPresetHedgesKeepTheBudgetBound(t *testing.T) {
	const n = 1000
	bound := func(news int64) float64 { return float64(news)*(1+retry.DefaultBudgetRatio) + retry.DefaultBudgetBurst }
	down := func() *modeltest.Fake {
		return modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 50 * ms})
	}
	t.Run("Route.Hedge", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var news atomic.Int64
			f := down()
			a := counted("a", f, &news)
			a.Hedge = &hedge.Config{Delay: 10 * ms}
			s, err := New(Config{Routes: []Route{a}})
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				s.Generate(context.Background(), idem)
			}
			if got := f.Count(); news.Load() != n || got != 1109 {
				t.Errorf("%d new requests made %d attempts (bound %v), want %d and 1109", news.Load(), got, bound(news.Load()), n)
			}
		})
	})
	t.Run("Config.Hedge", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var newsA, newsB atomic.Int64 // newsA: every request
			fa := down()
			fb := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("b").Response, Latency: 80 * ms})
			s, err := New(Config{Routes: []Route{counted("a", fa, &newsA), counted("b", fb, &newsB)}, Hedge: &hedge.Config{Delay: 10 * ms}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if resp, err := s.Generate(context.Background(), idem); err != nil || resp.Route != "b" {
					t.Fatalf("request %d: Generate = %v, %v, want b's answer", i, resp, err)
				}
			}
			if nb, got := newsB.Load(), fb.Count(); nb != 900 || got != 1000 || float64(got) > bound(nb) {
				t.Errorf("secondary: %d new requests, %d attempts (bound %v), want 900 and 1000", nb, got, bound(nb))
			}
		})
	})
}
