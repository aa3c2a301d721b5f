package route

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/rank"
)

// TestWeightsSplitTraffic: weights 7:3 over two routes of zero price send
// 70% and 30% of 1,000 calls, within the binomial bound (700 ± 65.2, 4.5
// standard deviations), where the cost ranking alone sent all 1,000 to the
// first route; with prices, the split ignores them.
func TestWeightsSplitTraffic(t *testing.T) {
	const n = 1000
	for _, price := range []float64{0, 5} {
		var a, b atomic.Int64
		r, err := NewRouter(RouterConfig{Routes: []portico.Route{
			{Name: "a", Model: answer("a", portico.Usage{}, &a), Capabilities: portico.Capabilities{InputPrice: price}},
			{Name: "b", Model: answer("b", portico.Usage{}, &b)},
		}, Weights: []float64{7, 3}})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := r.Generate(context.Background(), userReq("q")); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("price %v: weights 7:3 sent %d:%d of %d (bound 700 ± %.1f)", price, a.Load(), b.Load(), n, binom.Bound(n, 0.7))
		if a.Load()+b.Load() != n || !binom.Within(int(a.Load()), n, 0.7) {
			t.Errorf("price %v: weights 7:3 sent %d:%d, want 700 ± %.1f to a", price, a.Load(), b.Load(), binom.Bound(n, 0.7))
		}
	}
	// An explicit cost policy keeps ranking by cost over weight.
	var a, b atomic.Int64
	r, _ := NewRouter(RouterConfig{Routes: []portico.Route{
		{Name: "a", Model: answer("a", portico.Usage{}, &a)},
		{Name: "b", Model: answer("b", portico.Usage{}, &b)},
	}, Weights: []float64{7, 3}, Policy: rank.ByCost})
	for range 100 {
		_, _ = r.Generate(context.Background(), userReq("q"))
	}
	if a.Load() != 100 {
		t.Errorf("ByCost at zero prices sent %d of 100 to a, want 100 (ties go to the first)", a.Load())
	}
}

// TestSplitSkipsAnUnavailableRoute: the split draws among the routes that
// fit and are available, so a route whose breaker is open gets nothing and
// its share goes to the others in their proportions.
func TestSplitSkipsAnUnavailableRoute(t *testing.T) {
	const n = 1000
	var a, b, c atomic.Int64
	down := &switchHealth{}
	down.down.Store(true)
	r, err := NewRouter(RouterConfig{Routes: []portico.Route{
		{Name: "a", Model: answer("a", portico.Usage{}, &a), Health: down},
		{Name: "b", Model: answer("b", portico.Usage{}, &b)},
		{Name: "c", Model: answer("c", portico.Usage{}, &c)},
	}, Weights: []float64{5, 3, 2}})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := r.Generate(context.Background(), userReq("q")); err != nil {
			t.Fatal(err)
		}
	}
	if a.Load() != 0 || !binom.Within(int(b.Load()), n, 0.6) {
		t.Errorf("5:3:2 with a down sent %d:%d:%d, want 0 to a and 600 ± %.1f to b", a.Load(), b.Load(), c.Load(), binom.Bound(n, 0.6))
	}
}
