package stack

import (
	"context"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/modeltest"
	proute "github.com/portico-llm/portico/route"
)

// TestWeightedKindSplits: Kind Weighted{7, 3} sends 70% of 1,000 requests
// to the first route through each route's layers, within the binomial
// bound (700 ± 65.2), where the preset without it sent all 1,000 there.
func TestWeightedKindSplits(t *testing.T) {
	const n = 1000
	a, b := modeltest.NewFake(modeltest.Answer("a")), modeltest.NewFake(modeltest.Answer("b"))
	s, err := New(Config{Routes: []Route{route("a", a), route("b", b)}, Kind: Weighted{7, 3}})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := s.Generate(t.Context(), hello); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("Weighted{7, 3}: %d:%d of %d (bound 700 ± %.1f)", a.Count(), b.Count(), n, binom.Bound(n, 0.7))
	if a.Count()+b.Count() != n || !binom.Within(a.Count(), n, 0.7) {
		t.Errorf("Weighted{7, 3} sent %d:%d, want 700 ± %.1f to a", a.Count(), b.Count(), binom.Bound(n, 0.7))
	}
	if _, err := New(Config{Routes: []Route{route("a", a), route("b", b)}, Kind: Weighted{7}}); err == nil ||
		err.Error() != "stack: Weighted has 1 weights for 2 routes" {
		t.Errorf("Weighted{7} over two routes: %v", err)
	}
}

// TestThresholdKindFallsBack: a threshold router in the preset sends a
// request strong or weak by its score, and the group's fallback stands
// behind the pick: with the strong route answering 401 (Unusable), the
// weak one answers, the strong route's breaker opens at once, and the
// answer names the route that answered with its price.
func TestThresholdKindFallsBack(t *testing.T) {
	weak := route("weak", modeltest.NewFake(modeltest.Answer("w")))
	weak.Capabilities.OutputPrice = 1
	strongFake := modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(401)})
	strong := route("strong", strongFake)
	strong.Capabilities.OutputPrice = 10
	s, err := New(Config{Routes: []Route{weak, strong}, Kind: Threshold{Threshold: -1}}) // everything strong
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		resp, err := s.Generate(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		wantHops := "strong"
		if resp.Route != "weak" || resp.Cost != float64(resp.Usage.OutputTokens) || len(resp.Hops) != 1 || resp.Hops[0].Route != wantHops {
			t.Errorf("request %d: Route %q, Cost %v, Hops %+v; want weak at its price, after one hop on strong", i, resp.Route, resp.Cost, resp.Hops)
		}
	}
	if strongFake.Count() != 1 || s.Breaker("strong").State() != breaker.Open {
		t.Errorf("strong called %d times, breaker %v; want 1 call and open", strongFake.Count(), s.Breaker("strong").State())
	}
	for _, c := range []Config{
		{Routes: []Route{weak}, Kind: Threshold{}},
		{Routes: []Route{weak, strong}, Kind: Threshold{Strong: portico.Route{Model: strongFake}}},
	} {
		if _, err := New(c); err == nil || !strings.HasPrefix(err.Error(), "stack: Threshold") {
			t.Errorf("New(%d routes, %+v) = %v, want a stack: Threshold error", len(c.Routes), c.Kind, err)
		}
	}
}

// TestBalanceKind: a round-robin balancer in the preset takes its
// replicas in turn; a replica whose breaker opened (a 401) is no longer
// called, its turn going to the replica after it, and the request that
// found it failing was answered by the first replica behind it.
func TestBalanceKind(t *testing.T) {
	fakes := []*modeltest.Fake{modeltest.NewFake(modeltest.Answer("a")), modeltest.NewFake(modeltest.Answer("b")),
		modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(401)})}
	s, err := New(Config{Routes: []Route{route("a", fakes[0]), route("b", fakes[1]), route("c", fakes[2])}, Kind: Balance{Strategy: proute.RoundRobin{}}})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for range 30 {
		resp, err := s.Generate(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		by[resp.Route]++
	}
	// Turns a, b, c ten times: c's first turn fails and a answers behind
	// it, its later ones go to a.
	if fakes[2].Count() != 1 || by["a"] != 20 || by["b"] != 10 || s.Breaker("c").State() != breaker.Open {
		t.Errorf("answers %v, c called %d times, its breaker %v; want a 20, b 10, c once and open", by, fakes[2].Count(), s.Breaker("c").State())
	}
	if _, err := New(Config{Routes: []Route{route("a", fakes[0])}, Kind: Balance{Replicas: []portico.Route{{Name: "x"}}}}); err == nil ||
		!strings.HasPrefix(err.Error(), "stack: Balance's Replicas") {
		t.Errorf("Balance with Replicas: %v", err)
	}
}

// TestCascadeKind: a cascade in the preset accepts the cheap step's
// answer when its scorer does, and otherwise pays both steps.
func TestCascadeKind(t *testing.T) {
	cheap := route("cheap", modeltest.NewFakeFunc(func(n int, _ *portico.Request) modeltest.Outcome {
		if n%2 == 0 {
			return modeltest.Answer("good")
		}
		return modeltest.Answer("bad")
	}))
	cheap.Capabilities.OutputPrice = 1
	strong := route("strong", modeltest.NewFake(modeltest.Answer("good")))
	strong.Capabilities.OutputPrice = 10
	accept := func(_ *portico.Request, r *portico.Response) float64 {
		if r.Text == "good" {
			return 1
		}
		return 0
	}
	s, err := New(Config{Routes: []Route{cheap, strong}, Kind: Cascade{Steps: []proute.Step{{Accept: accept, Threshold: 0.5}, {}}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		resp, err := s.Generate(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Route)
		u := float64(resp.Usage.OutputTokens)
		if want := map[string]float64{"cheap": u, "strong": 11 * u}[resp.Route]; resp.Cost != want {
			t.Errorf("answer of %s costs %v, want %v", resp.Route, resp.Cost, want)
		}
	}
	if strings.Join(got, " ") != "cheap strong cheap strong" {
		t.Errorf("answered by %v, want cheap strong cheap strong", got)
	}
	if _, err := New(Config{Routes: []Route{cheap, strong}, Kind: Cascade{Steps: []proute.Step{{}}}}); err == nil ||
		err.Error() != "stack: Cascade has 1 steps for 2 routes" {
		t.Errorf("Cascade with one step for two routes: %v", err)
	}
}

// TestGroupsAndAliases: Request.Model selects a group ("fast" -> a, b;
// "smart" -> c), the model cleared so each route calls its own; an alias
// selects a group or renames the model for the default group; any other
// model goes to the first group unchanged.
func TestGroupsAndAliases(t *testing.T) {
	fakes := map[string]*modeltest.Fake{}
	var routes []Route
	for _, n := range []string{"a", "b", "c"} {
		fakes[n] = modeltest.NewFake(modeltest.Answer(n))
		routes = append(routes, route(n, fakes[n]))
	}
	s, err := New(Config{Routes: routes,
		Groups:  []Group{{Name: "fast", Routes: []string{"a", "b"}, Kind: Weighted{1, 1}}, {Name: "smart", Routes: []string{"c"}}},
		Aliases: map[string]string{"gpt-4": "smart", "old": "new-model"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ model, routes, sent string }{
		{"fast", "a b", ""}, {"smart", "c", ""}, {"gpt-4", "c", ""}, {"old", "a b", "new-model"}, {"other", "a b", "other"}, {"", "a b", ""},
	} {
		r := hello.Clone()
		r.Model = c.model
		resp, err := s.Generate(context.Background(), r)
		if err != nil {
			t.Fatalf("model %q: %v", c.model, err)
		}
		f := fakes[resp.Route]
		if sent := f.Requests()[f.Count()-1].Model; !strings.Contains(c.routes, resp.Route) || sent != c.sent {
			t.Errorf("model %q: answered by %s with model %q, want one of %q with %q", c.model, resp.Route, sent, c.routes, c.sent)
		}
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Routes: routes, Groups: []Group{{Name: "x", Routes: []string{"a", "b"}}}}, `stack: route "c" is in no group`},
		{Config{Routes: routes, Groups: []Group{{Name: "x", Routes: []string{"a", "b", "c", "d"}}}}, `stack: group "x": route "d" is not in Config.Routes, or listed twice`},
		{Config{Routes: routes, Groups: []Group{{Name: "x", Routes: []string{"a", "b", "c"}}, {Name: "x", Routes: []string{"a"}}}}, `stack: group 1 needs a Name of its own ("x")`},
		{Config{Routes: routes, Groups: []Group{{Name: "x", Routes: []string{"a", "b", "c"}}}, Aliases: map[string]string{"x": "y"}}, `stack: alias "x" -> "y": an alias and its target are non-empty, and no alias is a group's Name`},
		{Config{Routes: routes, Aliases: map[string]string{"p": "q", "q": "r"}}, ""},
		{Config{Routes: routes, Groups: []Group{{Name: "x", Routes: []string{"a", "b", "c"}, Kind: Threshold{}}}}, `stack: group "x": Threshold needs two routes, the weak then the strong, not 3`},
		{Config{Routes: routes, Kind: Weighted{1, 1, 1}, Groups: []Group{{Name: "x", Routes: []string{"a", "b", "c"}}}}, "stack: Config.Kind is set with Config.Groups: set each Group's Kind"},
	} {
		_, err := New(c.cfg)
		if c.want == "" {
			if err == nil || !strings.Contains(err.Error(), "names another alias") {
				t.Errorf("aliases %v: %v, want an alias of an alias refused", c.cfg.Aliases, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("New = %v, want %q", err, c.want)
		}
	}
}
