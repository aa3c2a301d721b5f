package route

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/rank"
)

func threeRoutes(h *switchHealth) []portico.Route {
	return []portico.Route{
		{Name: "big", Model: answer("big", portico.Usage{}, nil), Capabilities: portico.Capabilities{Tools: true, InputPrice: 10, OutputPrice: 30}},
		{Name: "mid", Model: answer("mid", portico.Usage{}, nil), Capabilities: portico.Capabilities{Tools: true, InputPrice: 3, OutputPrice: 6}, Health: h},
		{Name: "small", Model: answer("small", portico.Usage{}, nil), Capabilities: portico.Capabilities{InputPrice: 1, OutputPrice: 2, ContextWindow: 100}},
	}
}

func TestRouterByCost(t *testing.T) {
	h := &switchHealth{}
	r, err := NewRouter(RouterConfig{Routes: threeRoutes(h)})
	if err != nil {
		t.Fatal(err)
	}
	long := userReq(string(make([]byte, 1000))) // 254 tokens: beyond small's window
	tools := userReq("x")
	tools.Tools = []portico.Tool{{Name: "f"}}
	for _, tc := range []struct {
		name  string
		req   *portico.Request
		down  bool
		index int
	}{
		{"cheapest fits", userReq("x"), false, 2},
		{"context window", long, false, 1},
		{"tools", tools, false, 1},
		{"tools, mid down", tools, true, 0},
	} {
		h.down.Store(tc.down)
		pr, err := r.Pick(PickInfo{Request: tc.req})
		if err != nil || pr.Index != tc.index {
			t.Errorf("%s: Pick = %d, %v, want %d", tc.name, pr.Index, err, tc.index)
			continue
		}
		if got := r.Stats(pr.Index).InFlight; got != 1 {
			t.Errorf("%s: InFlight after Pick = %d, want 1", tc.name, got)
		}
		pr.Done(DoneInfo{})
		if got := r.Stats(pr.Index).InFlight; got != 0 {
			t.Errorf("%s: InFlight after Done = %d, want 0", tc.name, got)
		}
	}
	// EstimatedCost with MaxOutputTokens: input 5 tokens, output 10.
	var seen []float64
	r2, _ := NewRouter(RouterConfig{Routes: threeRoutes(&switchHealth{}), Policy: func(c rank.Candidate) float64 {
		seen = append(seen, c.EstimatedCost)
		return rank.ByCost(c)
	}})
	req := userReq("x")
	req.MaxOutputTokens = 10
	if _, err := r2.Pick(PickInfo{Request: req}); err != nil {
		t.Fatal(err)
	}
	if want := []float64{5*10 + 10*30, 5*3 + 10*6, 5*1 + 10*2}; len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("EstimatedCost per route = %v, want %v", seen, want)
	}
	// A contract's MaxInputTokens raises the priced input, as Fits does: 50
	// tokens no longer fit small's window of 100 with 60 output tokens.
	seen = nil
	req.Contract = &portico.Contract{MaxInputTokens: 50}
	req.MaxOutputTokens = 60
	if pr, err := r2.Pick(PickInfo{Request: req}); err != nil || pr.Index != 1 {
		t.Fatalf("Pick under contract = %d, %v, want 1", pr.Index, err)
	}
	if want := []float64{50*10 + 60*30, 50*3 + 60*6}; len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("EstimatedCost under contract = %v, want %v", seen, want)
	}
}

func TestRouterNoRoute(t *testing.T) {
	h := &switchHealth{}
	r, _ := NewRouter(RouterConfig{Routes: threeRoutes(h)[1:2]})
	h.down.Store(true)
	if _, err := r.Generate(context.Background(), userReq("x")); !errors.Is(err, ErrNoRoute) || portico.ClassOf(err) != portico.Rejected {
		t.Errorf("Generate(only route down) = %v, want Rejected wrapping ErrNoRoute", err)
	}
	img := &portico.Request{Messages: []portico.Message{{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "https://x/y.png"}}}}}
	h.down.Store(false)
	_, err := r.Generate(context.Background(), img)
	var pe *portico.Error
	if !errors.Is(err, ErrNoRoute) || portico.ClassOf(err) != portico.Incompatible || !errors.As(errors.Unwrap(err), &pe) || pe.Reason != "modality" {
		t.Errorf("Generate(image, text-only route) = %v, want Incompatible wrapping ErrNoRoute and the modality Fits error", err)
	}
}

func TestRouterFeedback(t *testing.T) {
	routes := []portico.Route{
		{Name: "a", Model: answer("a", portico.Usage{}, nil)},
		{Name: "b", Model: answer("b", portico.Usage{}, nil)},
	}
	r, _ := NewRouter(RouterConfig{Routes: routes, Policy: rank.ByLatency, Alpha: 0.5})
	pick := func() int {
		pr, err := r.Pick(PickInfo{Request: userReq("x")})
		if err != nil {
			t.Fatal(err)
		}
		return pr.Index
	}
	// Both unobserved (latency 0): the first wins ties.
	if i := pick(); i != 0 {
		t.Fatalf("first pick = %d, want 0", i)
	}
	r.done[0](DoneInfo{Latency: 400 * time.Millisecond})
	if i := pick(); i != 1 { // b unobserved looks faster: explored
		t.Fatalf("pick after a's 400ms = %d, want 1", i)
	}
	r.done[1](DoneInfo{Latency: 100 * time.Millisecond, TTFT: 50 * time.Millisecond})
	r.done[1](DoneInfo{Latency: 300 * time.Millisecond, TTFT: 150 * time.Millisecond}) // EWMA 200ms, TTFT 100ms
	r.done[0](DoneInfo{Latency: 100 * time.Millisecond})                               // EWMA 250ms
	if s := r.Stats(1); s.Latency != 200*time.Millisecond || s.TTFT != 100*time.Millisecond || s.Observed != 2 {
		t.Errorf("Stats(b) = latency %v ttft %v observed %d, want 200ms 100ms 2", s.Latency, s.TTFT, s.Observed)
	}
	if s := r.Stats(0); s.Latency != 250*time.Millisecond {
		t.Errorf("Stats(a).Latency = %v, want 250ms", s.Latency)
	}
	if i := pick(); i != 1 {
		t.Errorf("pick with a 250ms, b 200ms = %d, want 1", i)
	}
	// Error rate: route faults count, cancellations and incompatibility do not.
	r.done[1](DoneInfo{Err: &portico.Error{Class: portico.Transient}, Latency: 200 * time.Millisecond})
	r.done[1](DoneInfo{Err: context.Canceled})
	r.done[1](DoneInfo{Err: &portico.Error{Class: portico.Incompatible}})
	if s := r.Stats(1); s.ErrorRate != 0.5 || s.Observed != 3 {
		t.Errorf("Stats(b) error rate, observed = %v, %d, want 0.5, 3", s.ErrorRate, s.Observed)
	}
	rh, _ := NewRouter(RouterConfig{Routes: routes, Policy: rank.ByHealth})
	rh.done[0](DoneInfo{Err: &portico.Error{Class: portico.Transient}})
	if pr, _ := rh.Pick(PickInfo{Request: userReq("x")}); pr.Index != 1 {
		t.Errorf("ByHealth pick after a failed = %d, want 1", pr.Index)
	}
	// Weighted with static weights: a costs 2, b costs 3 but weighs 2.
	rw, _ := NewRouter(RouterConfig{Routes: []portico.Route{
		{Name: "a", Model: routes[0].Model, Capabilities: portico.Capabilities{InputPrice: 2}},
		{Name: "b", Model: routes[1].Model, Capabilities: portico.Capabilities{InputPrice: 3}},
	}, Weights: []float64{1, 2}, Policy: rank.Weighted{Cost: 1}.Score})
	if pr, _ := rw.Pick(PickInfo{Request: userReq("x"), InputTokens: 1}); pr.Index != 1 {
		t.Errorf("Weighted pick, a 2/1 vs b 3/2 = %d, want 1", pr.Index)
	}
	// A policy that scores the first route NaN does not make it win.
	rn, _ := NewRouter(RouterConfig{Routes: routes, Policy: func(c rank.Candidate) float64 {
		if c.Index == 0 {
			return math.NaN()
		}
		return 1
	}})
	if pr, _ := rn.Pick(PickInfo{Request: userReq("x")}); pr.Index != 1 {
		t.Errorf("pick with a scored NaN, b scored 1 = %d, want 1", pr.Index)
	}
}

func TestRouterGenerate(t *testing.T) {
	r, _ := NewRouter(RouterConfig{Routes: []portico.Route{
		{Name: "only", Model: answer("hello", portico.Usage{InputTokens: 3, OutputTokens: 2}, nil), Capabilities: portico.Capabilities{InputPrice: 1, OutputPrice: 10}},
	}})
	var got string
	req := userReq("x")
	req.OnChunk = func(c portico.Chunk) error { got += c.Text; return nil }
	resp, err := r.Generate(context.Background(), req)
	if err != nil || resp.Route != "only" || resp.Cost != 23 || got != "hello" {
		t.Fatalf("Generate = %+v, %v (streamed %q), want route only, cost 23, streamed hello", resp, err, got)
	}
	if s := r.Stats(0); s.Observed != 1 || s.TTFT <= 0 || s.InFlight != 0 {
		t.Errorf("Stats after a streamed call = %+v, want observed 1, TTFT > 0, nothing in flight", s)
	}
	plain := userReq("x")
	if allocs := testing.AllocsPerRun(100, func() {
		pr, _ := r.Pick(PickInfo{Request: plain})
		pr.Done(DoneInfo{})
	}); allocs != 0 {
		t.Errorf("Router Pick+Done allocs = %v, want 0", allocs)
	}
	for _, cfg := range []RouterConfig{{}, {Routes: []portico.Route{{Name: "x"}}},
		{Routes: r.routes, Weights: []float64{1, 2}}, {Routes: r.routes, Weights: []float64{0}}, {Routes: r.routes, Alpha: 2}} {
		if _, err := NewRouter(cfg); err == nil {
			t.Errorf("NewRouter(%+v) = nil error, want one", cfg)
		}
	}
}

func TestRouterConcurrent(t *testing.T) {
	r, _ := NewRouter(RouterConfig{Routes: threeRoutes(&switchHealth{}), Policy: rank.Weighted{Cost: 1, Latency: 1, ErrorRate: 1, InFlight: 1}.Score})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if _, err := r.Generate(context.Background(), userReq("x")); err != nil {
					t.Errorf("goroutine %d call %d: %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for i := range 3 {
		s := r.Stats(i)
		if s.InFlight != 0 {
			t.Errorf("Stats(%d).InFlight = %d after all calls, want 0", i, s.InFlight)
		}
		total += s.Observed
	}
	if total != 1600 {
		t.Errorf("observed calls = %d, want 1600", total)
	}
}

// Each routing Model sends a route the model name it declares, on a copy.
func TestRoutesGetTheirModelName(t *testing.T) {
	var got string
	m := portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
		got = r.Model
		return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
	})
	rt := portico.Route{Name: "r", Model: m, ModelName: "served-name"}
	req := &portico.Request{Model: "asked", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
	router, err := NewRouter(RouterConfig{Routes: []portico.Route{rt}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := router.Generate(context.Background(), req); err != nil || got != "served-name" || req.Model != "asked" {
		t.Errorf("Router sent %q (err %v), caller's %q; want served-name, asked", got, err, req.Model)
	}
	th, err := NewThreshold(ThresholdConfig{Strong: rt, Weak: rt})
	if err != nil {
		t.Fatal(err)
	}
	got = ""
	if _, err := th.Generate(context.Background(), req); err != nil || got != "served-name" || req.Model != "asked" {
		t.Errorf("Threshold sent %q (err %v), caller's %q; want served-name, asked", got, err, req.Model)
	}
	bal, err := NewBalancer(BalancerConfig{Replicas: []portico.Route{rt}})
	if err != nil {
		t.Fatal(err)
	}
	got = ""
	if _, err := bal.Generate(context.Background(), req); err != nil || got != "served-name" || req.Model != "asked" {
		t.Errorf("Balancer sent %q (err %v), caller's %q; want served-name, asked", got, err, req.Model)
	}
	casc, err := NewCascade(CascadeConfig{Steps: []Step{{Route: rt}}})
	if err != nil {
		t.Fatal(err)
	}
	got = ""
	if _, err := casc.Generate(context.Background(), req); err != nil || got != "served-name" || req.Model != "asked" {
		t.Errorf("Cascade sent %q (err %v), caller's %q; want served-name, asked", got, err, req.Model)
	}
}

// NewRouter names the first broken rule of its Config, in this order.
func TestRouterConfigErrors(t *testing.T) {
	two := []portico.Route{{Name: "a", Model: answer("a", portico.Usage{}, nil)}, {Name: "b", Model: answer("b", portico.Usage{}, nil)}}
	for _, c := range []struct {
		cfg  RouterConfig
		want string
	}{
		{RouterConfig{}, "route: NewRouter needs at least one route"},
		{RouterConfig{Routes: []portico.Route{{Name: "a"}}}, "route: NewRouter route a has a nil Model"},
		{RouterConfig{Routes: two, Weights: []float64{1}, Alpha: 2}, "route: NewRouter Weights must have one entry per route"},
		{RouterConfig{Routes: two, Weights: []float64{1, 0}, Alpha: 2}, "route: NewRouter Alpha outside [0, 1]"},
		{RouterConfig{Routes: two, Alpha: math.NaN()}, "route: NewRouter Alpha outside [0, 1]"},
		{RouterConfig{Routes: two, Weights: []float64{1, math.NaN()}}, "route: NewRouter weights must be > 0"},
	} {
		if r, err := NewRouter(c.cfg); r != nil || err == nil || err.Error() != c.want {
			t.Errorf("NewRouter(%+v) = %v, %v; want nil, %q", c.cfg, r, err, c.want)
		}
	}
}
