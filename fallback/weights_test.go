package fallback

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/modeltest"
)

// TestWeightsSplit: weights 7:3 put 70% of the requests on the first route,
// within the binomial bound (700 ± 65.2 of 1,000), where the configured
// order alone sent them all there.
func TestWeightsSplit(t *testing.T) {
	const n = 1000
	a, b := modeltest.NewFake(modeltest.Answer("a")), modeltest.NewFake(modeltest.Answer("b"))
	g := MustNew(Config{Routes: []portico.Route{named("a", a), named("b", b)}, Weights: []float64{7, 3}})
	for range n {
		if _, err := g.Generate(context.Background(), idem); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("weights 7:3: %d:%d of %d (bound 700 ± %.1f)", a.Count(), b.Count(), n, binom.Bound(n, 0.7))
	if a.Count()+b.Count() != n || !binom.Within(a.Count(), n, 0.7) {
		t.Errorf("weights 7:3 sent %d:%d, want 700 ± %.1f to a", a.Count(), b.Count(), binom.Bound(n, 0.7))
	}
}

// TestWeightsOrderTheFallback: a failed route's requests go on to the
// others in their weights' proportions. With 5:3:2 and a failing, b
// answers 0.3 + 0.5*3/5 = 60% of the requests and c 40%, where the
// configured order gave b all of a's.
func TestWeightsOrderTheFallback(t *testing.T) {
	const n = 1000
	a := modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503)})
	b, c := modeltest.NewFake(modeltest.Answer("b")), modeltest.NewFake(modeltest.Answer("c"))
	g := MustNew(Config{Routes: []portico.Route{named("a", a), named("b", b), named("c", c)}, Weights: []float64{5, 3, 2}})
	byB := 0
	for range n {
		resp, err := g.Generate(context.Background(), idem)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Route == "b" {
			byB++
		}
	}
	if !binom.Within(byB, n, 0.6) || !binom.Within(a.Count(), n, 0.5) {
		t.Errorf("5:3:2 with a failing: a called %d, b answered %d of %d; want 500 ± %.1f and 600 ± %.1f",
			a.Count(), byB, n, binom.Bound(n, 0.5), binom.Bound(n, 0.6))
	}
}

// TestWeightsOrderTheHedges: a hedge goes to the next route of the
// request's weighted order. With 5:3:2 and a slow a, the requests that
// start on a are hedged to b or c as 3:2.
func TestWeightsOrderTheHedges(t *testing.T) {
	const n = 1000
	synctest.Test(t, func(t *testing.T) {
		a := after("a", 10*time.Second)
		b, c := after("b", ms), after("c", ms)
		g := MustNew(Config{Routes: []portico.Route{named("a", a), named("b", b), named("c", c)}, Weights: []float64{5, 3, 2},
			Hedge: hedge.MustNew(hedge.Config{Delay: 100 * ms})})
		var toB, toC atomic.Int64
		for range n {
			resp, err := g.Generate(context.Background(), idem)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Hops) == 1 && strings.HasPrefix(hops(resp.Hops), "a (hedge lost)") {
				map[string]*atomic.Int64{"b": &toB, "c": &toC}[resp.Route].Add(1)
			}
		}
		hedged := int(toB.Load() + toC.Load())
		if hedged != a.Count() || !binom.Within(a.Count(), n, 0.5) || !binom.Within(int(toB.Load()), hedged, 0.6) {
			t.Errorf("5:3:2, a slow: a first %d times, hedged to b %d, to c %d; want 500 ± %.1f, every one hedged, 3:2 (b %.0f ± %.1f)",
				a.Count(), toB.Load(), toC.Load(), binom.Bound(n, 0.5), 0.6*float64(hedged), binom.Bound(hedged, 0.6))
		}
	})
}

// TestWeightsValidate: Weights that can only be a mistake are refused,
// naming the field.
func TestWeightsValidate(t *testing.T) {
	routes := []portico.Route{named("a", after("a", 0)), named("b", after("b", 0))}
	for _, w := range [][]float64{{1}, {1, 0}, {1, -1}, {1, math.Inf(1)}, {1, math.NaN()}} {
		if err := (Config{Routes: routes, Weights: w}).Validate(); err == nil || !strings.Contains(err.Error(), "fallback: Config.Weights") {
			t.Errorf("Weights %v: %v, want an error naming Config.Weights", w, err)
		}
	}
}
