package stack

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/throttle"
)

const ms = time.Millisecond

var idem = &portico.Request{Messages: hello.Messages, MaxOutputTokens: 16, Identity: portico.Identity{ClientKey: "c"}}

func slowThenFast() *modeltest.Fake {
	return modeltest.NewFake(
		modeltest.Outcome{Response: modeltest.Answer("slow").Response, Latency: 10 * time.Second},
		modeltest.Outcome{Response: modeltest.Answer("fast").Response, Latency: time.Second})
}

// Route.Hedge hedges to the route itself, outside its limiter and breaker:
// the hedge answers, the slow attempt is canceled without counting against
// the breaker, and the hedge is charged to the route's retry budget (10
// tokens full, one taken; the first call deposits 0.1 into a full bucket,
// and the hedge's own call, no new request, deposits nothing).
func TestRouteHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := route("a", slowThenFast())
		r.Hedge = &hedge.Config{Delay: 100 * ms}
		r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: 2}}
		s, err := New(Config{Routes: []Route{r}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.Generate(context.Background(), idem)
		if err != nil || resp.Text != "fast" || resp.Route != "a" {
			t.Fatalf("Generate = %v, %v, want the hedge's answer from a", resp, err)
		}
		if got := s.Retrier("a").BudgetLevel("a", "c"); got != 9 {
			t.Errorf("retry budget after a hedge = %v, want 9", got)
		}
		if s.Hedger("a") == nil || s.Hedger("b") != nil {
			t.Error("Hedger(a) = nil or Hedger(b) != nil")
		}
		if n := s.Limiter("a").Keys(); n != 1 {
			t.Errorf("limiter keys = %d, want 1", n)
		}
	})
}

// Config.Hedge hedges to the next route of the group, charged to that
// route's retry budget.
func TestGroupHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("a").Response, Latency: 10 * time.Second})
		b := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("b").Response, Latency: time.Second})
		s, err := New(Config{Routes: []Route{route("a", a), route("b", b)}, Hedge: &hedge.Config{Delay: 100 * ms}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp, err := s.Generate(context.Background(), idem)
		if err != nil || resp.Route != "b" || time.Since(start) != 1100*ms {
			t.Fatalf("Generate = %v, %v after %v, want b's answer after 1.1s", resp, err, time.Since(start))
		}
		if la, lb := s.Retrier("a").BudgetLevel("a", "c"), s.Retrier("b").BudgetLevel("b", "c"); la != 10 || lb != 9 {
			t.Errorf("budget levels a %v, b %v, want 10 and 9 (the hedge charged to b)", la, lb)
		}
		// With one route, Config.Hedge hedges to it.
		one, err := New(Config{Routes: []Route{route("a", slowThenFast())}, Hedge: &hedge.Config{Delay: 100 * ms}})
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := one.Generate(context.Background(), idem); err != nil || resp.Text != "fast" {
			t.Errorf("one route: Generate = %v, %v, want the hedge's answer", resp, err)
		}
	})
}

// Route.Throttle: a route that fails every call is throttled after its first
// failures (throttle.DefaultMinRequests, 10), and the group moves on to the
// next route at once.
func TestRouteThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		a := route("a", bad)
		a.Throttle = &throttle.Config{Rand: func() float64 { return 0 }}
		a.Skip |= SkipRetry
		a.Skip |= SkipBreaker // the throttle alone
		s, err := New(Config{Routes: []Route{a, route("b", modeltest.NewFake())}})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if resp, err := s.Generate(context.Background(), hello); err != nil || resp.Route != "b" {
				t.Fatalf("Generate = %v, %v, want b's answer", resp, err)
			}
		}
		if bad.Count() != 10 {
			t.Errorf("the failing route got %d calls, want 10 (the rest throttled)", bad.Count())
		}
		if p, r, acc := s.Throttle("a").Probability(); r != 10 || acc != 0 || p != throttle.DefaultMaxRejection {
			t.Errorf("Throttle(a).Probability = %v, %d, %d, want 0.9 (the cap), 10, 0", p, r, acc)
		}
	})
}

// An adaptive cap (Route.Limiter.Concurrency): with zero Limits the per-model limiter caps the calls in
// flight at the adaptive limit; the call beyond it is shed and the group
// moves on.
func TestRouteConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slowA := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("a").Response, Latency: time.Second})
		a := route("a", slowA)
		lim := adaptiveLimit(t, adaptive.Config{Algorithm: adaptive.AIMD{}, Initial: 2})
		a.Limiter = &ratelimit.Config{Concurrency: lim}
		s, err := New(Config{Routes: []Route{a, route("b", modeltest.NewFake(modeltest.Answer("b")))}})
		if err != nil {
			t.Fatal(err)
		}
		if got := lim.Limit(); got != 2 {
			t.Fatalf("a's Concurrency Limit() = %d, want 2", got)
		}
		var mu sync.Mutex
		by := map[string]int{}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				resp, err := s.Generate(context.Background(), hello)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				by[resp.Route]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if by["a"] != 2 || by["b"] != 1 {
			t.Errorf("answers by route %v, want 2 from a and 1 from b", by)
		}
	})
}

func TestTailConfigErrors(t *testing.T) {
	for _, r := range []Route{
		{Route: portico.Route{Name: "a", Model: modeltest.NewFake()}, Hedge: &hedge.Config{Delay: -1}},
		{Route: portico.Route{Name: "a", Model: modeltest.NewFake()}, Limiter: &ratelimit.Config{Limits: ratelimit.Limits{Requests: -1}}},
		{Route: portico.Route{Name: "a", Model: modeltest.NewFake()}, Throttle: &throttle.Config{K: 0.5}},
	} {
		if _, err := New(Config{Routes: []Route{r}}); err == nil || !strings.HasPrefix(err.Error(), "stack: route \"a\": ") {
			t.Errorf("New with %+v = %v, want an error starting with stack:", r, err)
		}
	}
	if _, err := New(Config{Routes: []Route{route("a", modeltest.NewFake())}, Hedge: &hedge.Config{MaxInFlight: -1}}); err == nil {
		t.Error("New with a bad Config.Hedge = nil error")
	}
}

// The preset with every tail and overload layer on keeps the Model
// contract: same-route and group hedging (every request of the suite may be
// repeated), an adaptive cap and a throttle on each route.
func TestTailConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
		caps := portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage, Tools: true, Schema: portico.SchemaStrict, ModelClass: "small"}
		var routes []Route
		for _, name := range []string{"a", "b"} {
			r := route(name, base)
			r.Capabilities = caps
			r.Hedge = &hedge.Config{Delay: 5 * ms}
			r.Limiter = &ratelimit.Config{Concurrency: adaptiveLimit(t, adaptive.Config{Initial: 200})}
			r.Throttle = &throttle.Config{}
			routes = append(routes, r)
		}
		s, err := New(Config{Routes: routes, Deadline: time.Minute, Hedge: &hedge.Config{Delay: 20 * ms}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
