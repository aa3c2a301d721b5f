package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/route"
	"github.com/portico-llm/portico/stack"
)

// routeResults is what the -route run saw: the weighted split's first
// choices and answers, and the cascade's steps and costs.
type routeResults struct {
	n            int
	first, by    map[string]int // the split: first route drawn, route that answered
	failed       int            // the split's requests that failed
	skipped      int            // the split's requests that found a route cooling down or open
	accepted     int            // the cascade's answers by its cheap step
	escalated    int            // by its strong step
	cascadeFails int
	cost         float64 // the cascade's, summed over its answers
	pool         [3]poolPhase
}

// The cascade's prices, seed 000's: a cheap step's answer costs c1 = 1
// unit, a strong one's c2 = 10 (per output token, for the fakes'
// answers of outputTokens tokens), and the cheap answer is accepted with
// probability u1 = 0.8.
const (
	cheapCost  = 1.0
	strongCost = 10.0
	acceptRate = 0.8
)

// runRoute is the -route run: over the same endpoints as the main job,
// the preset's routing kinds (stack.Config.Kind), each route with its
// breaker, retry and validate; c requests in flight at once; then a key
// pool over fakes of its own (runPool).
//
// A weighted split, Weighted{7, 3} over OpenAI and Anthropic: the first
// route of each request is drawn 7:3 (a canary, a cost split), and the
// other stands behind it. Its first choices stay within the binomial
// bound of 70%, whatever the faults move on.
//
// A cascade (FrugalGPT) from Gemini, the cheap step, to OpenAI, the
// strong one: a scorer (here a seeded draw accepting 80% of answers, a
// stand-in for a quality check) accepts the cheap answer or pays for the
// strong one too, so a request costs c1 + (1-u1) c2 = 3 units on
// average, against 10 all strong.
func runRoute(ctx context.Context, out io.Writer, eps [dial.N]*endpoint, n, c int) (*routeResults, error) {
	if n <= 0 || c <= 0 {
		return nil, fmt.Errorf("-n and -c must be positive")
	}
	res := &routeResults{n: n, first: map[string]int{}, by: map[string]int{}}
	r := func(id int, unitCost float64) stack.Route {
		rc := routeOf(id, eps[id], nil)
		c := &rc.Capabilities // seed 000's units, not the price pages'
		c.InputPrice, c.CachedInputPrice, c.CacheWritePrice, c.CacheWrite1hPrice = 0, 0, 0, 0
		c.OutputPrice = unitCost / (outputTokens + reasoningTokens) // the cascade's fakes think too
		return rc
	}
	// As the main job's group: a longer Retry-After moves on at once.
	fc := fallback.Config{WaitInPlace: 50 * time.Millisecond}
	split, err := stack.New(stack.Config{Routes: []stack.Route{r(dial.OpenAI, 0), r(dial.Anthropic, 0)}, Kind: stack.Weighted{7, 3},
		Fallback: fc, Deadline: requestDeadline})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex // guards res and rng
	each(n, c, func() {
		resp, err := split.Generate(ctx, routeReq)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.failed++
			return
		}
		res.by[resp.Route]++
		first := resp.Route
		for _, h := range resp.Hops {
			if h.Reason == "cooldown" || h.Reason == "unavailable" {
				res.skipped++ // not drawn: the split draws among the routes available
				return
			}
		}
		if len(resp.Hops) > 0 {
			first = resp.Hops[0].Route
		}
		res.first[first]++
	})
	rng := rand.New(rand.NewPCG(0, 1))
	accept := func(*portico.Request, *portico.Response) float64 {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() < acceptRate {
			return 1
		}
		return 0
	}
	cascade, err := stack.New(stack.Config{Routes: []stack.Route{r(dial.Gemini, cheapCost), r(dial.OpenAI, strongCost)},
		Kind: stack.Cascade{Steps: []route.Step{{Accept: accept, Threshold: 0.5}, {}}}, Fallback: fc, Deadline: requestDeadline})
	if err != nil {
		return nil, err
	}
	each(n, c, func() {
		resp, err := cascade.Generate(ctx, routeReq)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			res.cascadeFails++
			return
		case resp.Route == dial.Providers[dial.Gemini].Name:
			res.accepted++
		default:
			res.escalated++
		}
		res.cost += resp.Cost
	})
	res.print(out)
	if res.pool, err = runPool(ctx, n, c); err != nil {
		return nil, err
	}
	printPool(out, res.pool, n)
	return res, nil
}

// each runs f n times, c at once.
func each(n, c int, f func()) {
	var wg sync.WaitGroup
	work := make(chan struct{})
	for range min(c, n) {
		wg.Go(func() {
			for range work {
				f()
			}
		})
	}
	for range n {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
}

var routeReq = &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "Which route answers me?")}, MaxOutputTokens: outputTokens}

func (res *routeResults) print(out io.Writer) {
	oa, an, ge := dial.Providers[dial.OpenAI].Name, dial.Providers[dial.Anthropic].Name, dial.Providers[dial.Gemini].Name
	placed := res.first[oa] + res.first[an]
	fmt.Fprintf(out, "\nweighted split 7:3 (stack.Weighted{7, 3}), %d requests:\n", res.n)
	fmt.Fprintf(out, "  drawn first   %s %d, %s %d of the %d requests that found both routes available (expected %.0f ± %.0f: 4.5 standard deviations of the binomial)\n",
		oa, res.first[oa], an, res.first[an], placed, 0.7*float64(placed), binom.Bound(placed, 0.7))
	fmt.Fprintf(out, "  answered by   %s %d, %s %d; failed %d (a failed first choice moves on to the other; %d found one cooling down or open)\n",
		oa, res.by[oa], an, res.by[an], res.failed, res.skipped)
	answered := res.accepted + res.escalated
	if answered == 0 {
		return
	}
	u1 := float64(res.accepted) / float64(answered)
	fmt.Fprintf(out, "cascade %s -> %s (stack.Cascade, seed 000: c1 = %g, c2 = %g, u1 = %g), %d requests:\n", ge, oa, cheapCost, strongCost, acceptRate, res.n)
	fmt.Fprintf(out, "  cheap answer accepted %d, escalated %d, failed %d\n", res.accepted, res.escalated, res.cascadeFails)
	fmt.Fprintf(out, "  cost %.3f units a request; E[C] = c1 + (1-u1) c2 = %.3f at the u1 seen (%.3f), 3 at 0.8; all strong: %g\n",
		res.cost/float64(answered), cheapCost+(1-u1)*strongCost, u1, strongCost)
}
