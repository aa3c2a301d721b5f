package route

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
)

// twoStep builds seed 000's cascade: a weak step priced c1 per request whose
// answer is good with probability u1 (drawn from rng), accepted when good, and
// a strong step priced c2. Each fake reports one input token, so Cost is the
// price.
func twoStep(t *testing.T, rng *rand.Rand, u1, c1, c2 float64) (*Cascade, portico.Route) {
	t.Helper()
	weak := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		text := "bad"
		if rng.Float64() < u1 {
			text = "good"
		}
		return &portico.Response{Text: text, FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 1}}, nil
	})
	strong := portico.Route{Name: "strong", Model: answer("good", portico.Usage{InputTokens: 1}, nil), Capabilities: portico.Capabilities{InputPrice: c2}}
	c, err := NewCascade(CascadeConfig{Steps: []Step{
		{Route: portico.Route{Name: "weak", Model: weak, Capabilities: portico.Capabilities{InputPrice: c1}},
			Accept: func(_ *portico.Request, r *portico.Response) float64 {
				if r.Text == "good" {
					return 1
				}
				return 0
			}, Threshold: 0.5},
		{Route: strong},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c, strong
}

// TestCascadeSeed000 reproduces seed 000: with c1 = 1, c2 = 10 and u1 = 0.8 a
// cascade costs E[C] = c1 + (1-u1) c2 = 3 per request, i.e. 30 strong-call
// units per 100 requests, against 10 per request (100 units per 100) when all
// go to the strong model. The realised mean over N = 10,000 requests is
// 1 + 10 R/N with R ~ Binomial(N, 0.2): its standard error is
// 10 sqrt(0.8*0.2/N) = 0.04, and the test allows 4 standard errors (0.16).
func TestCascadeSeed000(t *testing.T) {
	const n = 10000
	c, strong := twoStep(t, rand.New(rand.NewPCG(0, 1)), 0.8, 1, 10)
	ctx := context.Background()
	total, rejected, first100 := 0.0, 0, 0.0
	for i := range n {
		resp, err := c.Generate(ctx, userReq("q"))
		if err != nil {
			t.Fatal(err)
		}
		total += resp.Cost
		if i < 100 {
			first100 += resp.Cost
		}
		switch resp.Route {
		case "weak":
			if resp.Cost != 1 || len(resp.Hops) != 0 {
				t.Fatalf("accepted weak answer: Cost %v, hops %v, want 1, none", resp.Cost, resp.Hops)
			}
		case "strong":
			rejected++
			if resp.Cost != 11 || len(resp.Hops) != 1 || resp.Hops[0].Route != "weak" || !errors.Is(resp.Hops[0].Err, ErrNotAccepted) {
				t.Fatalf("escalated answer: Cost %v, hops %+v, want 11 and one weak hop not accepted", resp.Cost, resp.Hops)
			}
		}
	}
	if total != n+10*float64(rejected) {
		t.Errorf("total cost = %v, want N*c1 + rejected*c2 = %v", total, n+10*float64(rejected))
	}
	mean := total / n
	se := 10 * math.Sqrt(0.8*0.2/n)
	if math.Abs(mean-3) > 4*se {
		t.Errorf("mean cascade cost = %.4f per request, want 3 ± %.2f (4 standard errors)", mean, 4*se)
	}
	// All to the strong model: a Threshold router that sends everything strong.
	all, _ := NewThreshold(ThresholdConfig{Strong: strong, Weak: strong, Threshold: -1})
	allTotal := 0.0
	for range 100 {
		resp, _ := all.Generate(ctx, userReq("q"))
		allTotal += resp.Cost
	}
	t.Logf("seed 000: cascade %.2f strong-call units per 100 requests (first 100: %.0f), all-strong %.0f; seed: 30 vs 100",
		100*mean/10, first100/10, allTotal/10)
	if allTotal != 1000 {
		t.Errorf("all-strong cost of 100 requests = %v, want 1000 (100 strong-call units)", allTotal)
	}
}

// TestCascadePaysOffIff checks both sides of u1 > c1/c2 = 0.1: at u1 = 0.05
// the cascade costs 1 + 0.95*10 = 10.5 per request (more than 10), at u1 = 0.2
// it costs 9 (less). With N = 10,000 the standard errors are 0.022 and 0.04,
// so the margins of 0.5 and 1 are over 20 standard errors.
func TestCascadePaysOffIff(t *testing.T) {
	for _, tc := range []struct {
		u1      float64
		cheaper bool
	}{{0.05, false}, {0.2, true}} {
		c, _ := twoStep(t, rand.New(rand.NewPCG(5, 6)), tc.u1, 1, 10)
		total := 0.0
		for range 10000 {
			resp, err := c.Generate(context.Background(), userReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			total += resp.Cost
		}
		mean := total / 10000
		if got := mean < 10; got != tc.cheaper {
			t.Errorf("u1 = %v: mean cascade cost %.3f < all-strong 10 is %v, want %v (u1 > c1/c2 = 0.1)", tc.u1, mean, got, tc.cheaper)
		}
	}
}

func acceptText(want string) Acceptor {
	return func(_ *portico.Request, r *portico.Response) float64 {
		if r.Text == want {
			return 1
		}
		return 0
	}
}

func TestCascadeSteps(t *testing.T) {
	ctx := context.Background()
	u := portico.Usage{InputTokens: 2, OutputTokens: 1}
	var aCalls, bCalls, cCalls atomic.Int64
	bHealth := &switchHealth{}
	steps := func(last Acceptor) []Step {
		return []Step{
			{Route: portico.Route{Name: "a", Model: answer("A", u, &aCalls), Capabilities: portico.Capabilities{InputPrice: 1, OutputPrice: 1}}, Accept: acceptText("good"), Threshold: 1},
			{Route: portico.Route{Name: "b", Model: answer("B", u, &bCalls), Health: bHealth, Capabilities: portico.Capabilities{InputPrice: 2, OutputPrice: 2}}, Accept: acceptText("B"), Threshold: 1},
			{Route: portico.Route{Name: "c", Model: answer("C", u, &cCalls), Capabilities: portico.Capabilities{InputPrice: 5, OutputPrice: 5}}, Accept: last, Threshold: 1},
		}
	}
	c, _ := NewCascade(CascadeConfig{Steps: steps(nil)})
	resp, err := c.Generate(ctx, userReq("q"))
	if err != nil || resp.Route != "b" || resp.Cost != 3+6 || len(resp.Hops) != 1 || resp.Hops[0].Reason != "not accepted" {
		t.Errorf("a rejected, b accepted: %+v, %v; want route b, cost 9, one hop", resp, err)
	}
	bHealth.down.Store(true)
	resp, err = c.Generate(ctx, userReq("q"))
	if err != nil || resp.Route != "c" || resp.Cost != 3+15 || len(resp.Hops) != 2 || resp.Hops[1].Reason != "unavailable" || resp.Hops[1].Err != nil {
		t.Errorf("b down: %+v, %v; want route c, cost 18, hops a (not accepted), b (unavailable)", resp, err)
	}
	if bCalls.Load() != 1 {
		t.Errorf("calls to b = %d, want 1 (skipped while down)", bCalls.Load())
	}
	// Last step rejects too: NoneAcceptedLast returns its answer, NoneAcceptedError an error.
	never := func(*portico.Request, *portico.Response) float64 { return 0 }
	c, _ = NewCascade(CascadeConfig{Steps: steps(never)})
	resp, err = c.Generate(ctx, userReq("q"))
	if err != nil || resp.Route != "c" || resp.Cost != 18 || len(resp.Hops) != 2 {
		t.Errorf("all rejected, NoneAcceptedLast: %+v, %v; want c's answer with cost 18 and 2 hops", resp, err)
	}
	c, _ = NewCascade(CascadeConfig{Steps: steps(never), NoneAccepted: NoneAcceptedError})
	if _, err = c.Generate(ctx, userReq("q")); !errors.Is(err, ErrExhausted) || !errors.Is(err, ErrNotAccepted) || portico.ClassOf(err) != portico.InvalidResponse {
		t.Errorf("all rejected, NoneAcceptedError: %v, want InvalidResponse wrapping ErrExhausted and ErrNotAccepted", err)
	}
	// A failing step moves on; the final one failing returns the latest rejected answer.
	bHealth.down.Store(false)
	st := steps(nil)
	st[1].Route.Model = failWith(portico.Transient, nil)
	st[2].Route.Model = failWith(portico.Transient, nil)
	c, _ = NewCascade(CascadeConfig{Steps: st})
	resp, err = c.Generate(ctx, userReq("q"))
	if err != nil || resp.Route != "a" || resp.Cost != 3 || len(resp.Hops) != 2 || resp.Hops[0].Route != "b" || resp.Hops[1].Reason != "transient" {
		t.Errorf("b and c fail: %+v, %v; want a's rejected answer, cost 3, hops b and c transient", resp, err)
	}
	st[0].Route.Model = failWith(portico.RateLimited, nil)
	c, _ = NewCascade(CascadeConfig{Steps: st})
	if _, err = c.Generate(ctx, userReq("q")); !errors.Is(err, ErrExhausted) || portico.ClassOf(err) != portico.Transient {
		t.Errorf("every step fails: %v, want the last class (transient) wrapping ErrExhausted", err)
	}
	// A Permanent error stops the cascade: no other step can fix the request.
	var permCalls atomic.Int64
	st = steps(nil)
	st[0].Route.Model = failWith(portico.Permanent, nil)
	st[1].Route.Model = failWith(portico.Transient, &permCalls)
	c, _ = NewCascade(CascadeConfig{Steps: st})
	if _, err = c.Generate(ctx, userReq("q")); portico.ClassOf(err) != portico.Permanent || permCalls.Load() != 0 {
		t.Errorf("permanent error at step a: %v with %d calls to b, want Permanent and no call to b", err, permCalls.Load())
	}
	// The caller's cancellation stops the cascade at the first step.
	aCalls.Store(0)
	bCalls.Store(0)
	c, _ = NewCascade(CascadeConfig{Steps: steps(nil)})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err = c.Generate(cctx, userReq("q")); portico.ClassOf(err) != portico.Canceled || bCalls.Load() != 0 {
		t.Errorf("canceled: %v with %d calls to b, want Canceled and no call to b", err, bCalls.Load())
	}
	// No step fits: Incompatible, ErrNoRoute.
	img := &portico.Request{Messages: []portico.Message{{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "data:x"}}}}}
	if _, err = c.Generate(ctx, img); !errors.Is(err, ErrNoRoute) || portico.ClassOf(err) != portico.Incompatible {
		t.Errorf("no step fits: %v, want Incompatible wrapping ErrNoRoute", err)
	}
	// Construction errors.
	bad := steps(nil)
	bad[0], bad[2] = bad[2], bad[0]
	for name, cfg := range map[string]CascadeConfig{"none": {}, "nil model": {Steps: []Step{{}}}, "cost order": {Steps: bad}} {
		if _, err := NewCascade(cfg); err == nil {
			t.Errorf("NewCascade(%s) = nil error, want one", name)
		}
	}
}

func TestCascadeStreaming(t *testing.T) {
	u := portico.Usage{InputTokens: 1}
	st := []Step{
		{Route: portico.Route{Name: "a", Model: answer("first draft", u, nil)}, Accept: acceptText("never"), Threshold: 1},
		{Route: portico.Route{Name: "b", Model: answer("final answer", u, nil)}},
	}
	for _, tc := range []struct {
		streamLast bool
	}{{false}, {true}} {
		c, _ := NewCascade(CascadeConfig{Steps: st, StreamLast: tc.streamLast})
		var chunks []string
		req := userReq("q")
		req.OnChunk = func(ch portico.Chunk) error { chunks = append(chunks, ch.Text); return nil }
		resp, err := c.Generate(context.Background(), req)
		if err != nil || resp.Route != "b" {
			t.Fatalf("StreamLast %v: %+v, %v", tc.streamLast, resp, err)
		}
		if len(chunks) != 1 || chunks[0] != "final answer" {
			t.Errorf("StreamLast %v: caller saw chunks %q, want only [final answer] (the rejected draft is never streamed)", tc.streamLast, chunks)
		}
	}
	// A live final step that fails: its error, not the rejected draft.
	st[1].Route.Model = failWith(portico.Transient, nil)
	c, _ := NewCascade(CascadeConfig{Steps: st, StreamLast: true})
	req := userReq("q")
	req.OnChunk = func(portico.Chunk) error { return nil }
	if resp, err := c.Generate(context.Background(), req); portico.ClassOf(err) != portico.Transient {
		t.Errorf("live final step fails: %+v, %v; want its Transient error", resp, err)
	}
	if NoneAcceptedLast.String() != "last" || NoneAcceptedError.String() != "error" || NoneAccepted(9).String() != "NoneAccepted(9)" {
		t.Error("NoneAccepted.String names are wrong")
	}
}
