package stack

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/spend"
)

// TestStackCalibratesEstimator: without Fallback.Estimator the stack's
// estimator is calibrated by its limiters: the client limiter, or the
// route's, in memory or over a shared store. A prompt the byte rule
// estimates at 104 tokens, answered with 208 input tokens, is priced by
// the spend budget at 104 tokens (0.104) for its first 16 calls and at
// 208 (0.208) after, and still after an Update with new limits.
func TestStackCalibratesEstimator(t *testing.T) {
	for _, teacher := range []string{"client", "route", "shared route"} {
		t.Run(teacher, func(t *testing.T) {
			r := route("only", modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop,
				Usage: portico.Usage{InputTokens: 208, OutputTokens: 1}}}))
			r.Capabilities = portico.Capabilities{InputPrice: 0.001}
			store := &countStore{taken: map[string]int{}}
			cfg := func(tokens int) Config {
				c := Config{Routes: []Route{r}, Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 1000}}}}
				lim := &ratelimit.Config{Limits: ratelimit.Limits{Tokens: tokens, MaxInFlight: 8}}
				switch teacher {
				case "client":
					c.Client = lim
				case "shared route":
					lim.Shared.Store = store
					fallthrough
				default:
					c.Routes[0].Limiter = lim
				}
				return c
			}
			s, err := New(cfg(1_000_000))
			if err != nil {
				t.Fatal(err)
			}
			req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, strings.Repeat("x", 400))}, MaxOutputTokens: 1}
			for i := range 17 {
				want := 0.104
				if i == 16 {
					want = 0.208
				}
				if got := s.Spend().Estimate(req); got < want-1e-9 || got > want+1e-9 {
					t.Fatalf("after %d calls: Estimate = %v, want %v", i, got, want)
				}
				if _, err := s.Generate(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Update(cfg(2_000_000)); err != nil {
				t.Fatal(err)
			}
			if got := s.Spend().Estimate(req); got < 0.208-1e-9 || got > 0.208+1e-9 {
				t.Errorf("after an Update: Estimate = %v, want 0.208", got)
			}
		})
	}
}

// observer is an Estimator that counts the samples it is given, and
// those with its estimate (104) and 208 input tokens.
type observer struct{ samples, exact atomic.Int64 }

func (*observer) EstimateInputTokens(*portico.Request) int { return 104 }
func (o *observer) ObserveInputTokens(_ *portico.Request, estimate, inputTokens int) {
	o.samples.Add(1)
	if estimate == 104 && inputTokens == 208 {
		o.exact.Add(1)
	}
}

// TestStackOneSamplePerCall: a call through a client limiter and a route
// limiter, both given the stack's estimator, gives it exactly one sample
// (the route's, in memory or over a shared store with an in-flight cap);
// without a route limiter, the client limiter's one.
func TestStackOneSamplePerCall(t *testing.T) {
	for _, c := range []struct {
		name               string
		routeLimit, shared bool
	}{{"client and route", true, false}, {"client and shared route", true, true}, {"client only", false, false}} {
		t.Run(c.name, func(t *testing.T) {
			o := &observer{}
			r := route("only", modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop,
				Usage: portico.Usage{InputTokens: 208, OutputTokens: 1}}}))
			if c.routeLimit {
				r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Tokens: 1_000_000}}
			}
			if c.shared {
				r.Limiter.MaxInFlight = 8
				r.Limiter.Shared = ratelimit.Shared{Store: &countStore{taken: map[string]int{}}}
			}
			s, err := New(Config{Routes: []Route{r}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Tokens: 1_000_000}},
				Fallback: fallback.Config{Estimator: o}})
			if err != nil {
				t.Fatal(err)
			}
			req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, MaxOutputTokens: 1}
			if _, err := s.Generate(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			if got, exact := o.samples.Load(), o.exact.Load(); got != 1 || exact != 1 {
				t.Errorf("samples after one call = %d, %d of them of 104 estimated and 208 reported; want 1 and 1", got, exact)
			}
		})
	}
}
