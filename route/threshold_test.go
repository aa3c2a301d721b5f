package route

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
)

func TestThreshold(t *testing.T) {
	var strongCalls, weakCalls atomic.Int64
	weakHealth := &switchHealth{}
	th, err := NewThreshold(ThresholdConfig{
		Strong:    portico.Route{Name: "strong", Model: answer("S", portico.Usage{InputTokens: 10, OutputTokens: 5}, &strongCalls), Capabilities: portico.Capabilities{Tools: true, InputPrice: 10, OutputPrice: 20}},
		Weak:      portico.Route{Name: "weak", Model: answer("W", portico.Usage{InputTokens: 10, OutputTokens: 5}, &weakCalls), Capabilities: portico.Capabilities{InputPrice: 1, OutputPrice: 2}, Health: weakHealth},
		Scorer:    scoreOf,
		Threshold: 0.7,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	steps := []struct {
		score     string
		tools     bool
		weakDown  bool
		wantRoute string
		wantCost  float64
		wantHops  int
	}{
		{"0.9", false, false, "strong", 10*10 + 5*20, 0},
		{"0.7", false, false, "weak", 10*1 + 5*2, 0}, // equal to the threshold: weak
		{"0.1", false, false, "weak", 20, 0},
		{"0.1", true, false, "strong", 200, 1}, // weak lacks tools: Fits sends it strong
		{"0.1", false, true, "strong", 200, 1}, // weak's breaker open
	}
	for i, s := range steps {
		weakHealth.down.Store(s.weakDown)
		req := &portico.Request{Model: s.score, Messages: userReq("q").Messages}
		if s.tools {
			req.Tools = []portico.Tool{{Name: "f"}}
		}
		resp, err := th.Generate(ctx, req)
		if err != nil {
			t.Fatalf("step %d: Generate: %v", i, err)
		}
		if resp.Route != s.wantRoute || resp.Cost != s.wantCost || len(resp.Hops) != s.wantHops {
			t.Errorf("step %d: Route, Cost, hops = %s, %v, %d, want %s, %v, %d", i, resp.Route, resp.Cost, len(resp.Hops), s.wantRoute, s.wantCost, s.wantHops)
		}
	}
	if d := th.Decide(&portico.Request{Model: "0.71"}); !d.Strong || d.Score != 0.71 {
		t.Errorf("Decide(0.71) = %+v, want strong with score 0.71", d)
	}
	// Neither fits: Incompatible, wrapping ErrNoRoute and the Fits error.
	weakHealth.down.Store(false)
	req := &portico.Request{Model: "0.9", Messages: userReq("q").Messages, Schema: &portico.Schema{Name: "x"}}
	_, err = th.Generate(ctx, req)
	if !errors.Is(err, ErrNoRoute) || portico.ClassOf(err) != portico.Incompatible {
		t.Errorf("Generate(schema nobody supports) = %v, want Incompatible wrapping ErrNoRoute", err)
	}
	// Weak fits but is down, strong does not fit: Rejected.
	weakHealth.down.Store(true)
	req = &portico.Request{Model: "0.1", Messages: userReq("q").Messages, MaxOutputTokens: 10}
	th2, _ := NewThreshold(ThresholdConfig{
		Strong: portico.Route{Name: "strong", Model: answer("S", portico.Usage{}, nil), Capabilities: portico.Capabilities{MaxOutput: 5}},
		Weak:   portico.Route{Name: "weak", Model: answer("W", portico.Usage{}, nil), Health: weakHealth},
		Scorer: scoreOf,
	})
	if _, err := th2.Generate(ctx, req); !errors.Is(err, ErrNoRoute) || portico.ClassOf(err) != portico.Rejected {
		t.Errorf("Generate(weak down, strong unfit) = %v, want Rejected wrapping ErrNoRoute", err)
	}
	if _, err := NewThreshold(ThresholdConfig{}); err == nil {
		t.Error("NewThreshold(zero config) = nil error, want one")
	}
	ok := portico.Route{Name: "r", Model: answer("x", portico.Usage{}, nil)}
	if _, err := NewThreshold(ThresholdConfig{Strong: ok, Weak: ok, Threshold: math.NaN()}); err == nil {
		t.Error("NewThreshold(NaN threshold) = nil error, want one (every request would go weak)")
	}
}
