package route

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
)

// priced answers with usage worth 10 on the routes below (5 input tokens at
// 2) and, when cost is non-zero, a Cost of its own, as an inner routing
// layer or a priced stack sets it.
func priced(cost float64) portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 5}, Cost: cost,
			Hops: []portico.Hop{{Route: "inner", Reason: "transient"}}}, nil
	})
}

// everyLayer builds each Model of the package over one route m (and, for
// the cascade, the threshold router and a skipped route, a route that is
// never asked).
func everyLayer(t *testing.T, m portico.Model) map[string]portico.Model {
	t.Helper()
	caps := portico.Capabilities{InputPrice: 2}
	rt := portico.Route{Name: "r", Model: m, Capabilities: caps}
	r, err := NewRouter(RouterConfig{Routes: []portico.Route{rt}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBalancer(BalancerConfig{Replicas: []portico.Route{rt}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCascade(CascadeConfig{Steps: []Step{{Route: rt}}})
	if err != nil {
		t.Fatal(err)
	}
	down := &switchHealth{}
	down.down.Store(true)
	th, err := NewThreshold(ThresholdConfig{Weak: portico.Route{Name: "w", Model: failWith(portico.Permanent, nil), Health: down}, Strong: rt})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]portico.Model{"Router": r, "Balancer": b, "Cascade": c, "Threshold": th}
}

// TestStampKeepsInnerCost: every routing layer keeps the Cost an inner layer
// set (42, where the route's price of the usage is 10), prices the answer
// itself only when none did, and puts its own hops before the inner ones.
func TestStampKeepsInnerCost(t *testing.T) {
	for _, tc := range []struct {
		inner, want float64
	}{{42, 42}, {0, 10}} {
		for name, m := range everyLayer(t, priced(tc.inner)) {
			resp, err := m.Generate(context.Background(), userReq("x"))
			if err != nil {
				t.Fatalf("%s: Generate = %v", name, err)
			}
			wantHops := 1
			if name == "Threshold" {
				wantHops = 2 // w unavailable, then the inner hop
			}
			if resp.Cost != tc.want || resp.Route != "r" || len(resp.Hops) != wantHops || resp.Hops[wantHops-1].Route != "inner" {
				t.Errorf("%s over an inner Cost %v: Cost %v, Route %q, Hops %v; want %v, r, %d hops ending with inner", name, tc.inner, resp.Cost, resp.Route, resp.Hops, tc.want, wantHops)
			}
		}
	}
}

// TestCascadeAddsBilledFailures: a step that failed with billed usage
// (portico.Error.Usage) is part of the cascade's Cost, as in a fallback group.
func TestCascadeAddsBilledFailures(t *testing.T) {
	caps := portico.Capabilities{InputPrice: 2}
	billed := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: portico.InvalidResponse, Usage: &portico.Usage{InputTokens: 3}}
	})
	c, err := NewCascade(CascadeConfig{Steps: []Step{
		{Route: portico.Route{Name: "a", Model: billed, Capabilities: caps}},
		{Route: portico.Route{Name: "b", Model: priced(0), Capabilities: caps}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Generate(context.Background(), userReq("x"))
	if err != nil || resp.Route != "b" || resp.Cost != 16 {
		t.Fatalf("Generate = %+v, %v; want b's answer at Cost 16 (a's billed 6 + b's 10)", resp, err)
	}
}
