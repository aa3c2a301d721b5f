package route_test

import (
	"context"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/route"
)

// fake answers text with one input token of usage.
func fake(text string) portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: text, FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 1}}, nil
	})
}

func ExampleCascade() {
	c, err := route.NewCascade(route.CascadeConfig{Steps: []route.Step{{
		Route: portico.Route{Name: "small", Model: fake("I am not sure"), Capabilities: portico.Capabilities{InputPrice: 1}},
		Accept: func(_ *portico.Request, r *portico.Response) float64 {
			if r.Text == "I am not sure" {
				return 0
			}
			return 1
		},
		Threshold: 0.5,
	}, {
		Route: portico.Route{Name: "large", Model: fake("42"), Capabilities: portico.Capabilities{InputPrice: 10}},
	}}})
	if err != nil {
		panic(err)
	}
	resp, _ := c.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "6*7?")}})
	fmt.Println(resp.Text, "from", resp.Route, "cost", resp.Cost)
	for _, h := range resp.Hops {
		fmt.Println("left", h.Route+":", h.Reason)
	}
	// Output:
	// 42 from large cost 11
	// left small: not accepted
}

func ExampleCalibrate() {
	var sample []*portico.Request
	for _, q := range []string{"hi", "what time is it?", "prove that sqrt 2 is irrational, step by step", "thanks"} {
		sample = append(sample, &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, q)}})
	}
	th := route.Calibrate(sample, route.HeuristicScore, 0.25) // one call in four goes strong
	r, _ := route.NewThreshold(route.ThresholdConfig{
		Strong: portico.Route{Name: "strong", Model: fake("S")}, Weak: portico.Route{Name: "weak", Model: fake("W")},
		Threshold: th,
	})
	for _, req := range sample {
		resp, _ := r.Generate(context.Background(), req)
		fmt.Println(resp.Route)
	}
	// Output:
	// weak
	// weak
	// strong
	// weak
}

func ExampleBalancer() {
	replicas := []portico.Route{{Name: "gpu-0", Model: fake("a")}, {Name: "gpu-1", Model: fake("b")}}
	b, _ := route.NewBalancer(route.BalancerConfig{Replicas: replicas, Strategy: route.Affinity{ShortTokens: 8}})
	long := portico.Text(portico.RoleUser, "a prompt long enough to pass eight tokens")
	for _, id := range []string{"agent-1", "agent-2", "agent-1", "agent-1"} {
		req := &portico.Request{Messages: []portico.Message{long}, Identity: portico.Identity{SessionID: id}}
		resp, _ := b.Generate(context.Background(), req)
		fmt.Println(id, "->", resp.Route)
	}
	// Output:
	// agent-1 -> gpu-0
	// agent-2 -> gpu-1
	// agent-1 -> gpu-0
	// agent-1 -> gpu-0
}

func ExampleRouter() {
	r, _ := route.NewRouter(route.RouterConfig{Routes: []portico.Route{
		{Name: "frontier", Model: fake("F"), Capabilities: portico.Capabilities{Tools: true, InputPrice: 5e-6}},
		{Name: "mini", Model: fake("M"), Capabilities: portico.Capabilities{InputPrice: 1.5e-7}},
	}}) // Policy nil: ByCost
	plain := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}}
	withTools := plain.Clone()
	withTools.Tools = []portico.Tool{{Name: "search"}}
	for _, req := range []*portico.Request{plain, withTools} {
		resp, _ := r.Generate(context.Background(), req)
		fmt.Println(resp.Route)
	}
	// Output:
	// mini
	// frontier
}
