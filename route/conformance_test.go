package route_test

import (
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/route"
)

// TestConformance runs modeltest's Model-contract suite over every Model of
// the package, each built around the suite's base Model.
func TestConformance(t *testing.T) {
	for name, wrap := range suiteModels() {
		t.Run(name, func(t *testing.T) { modeltest.Run(t, wrap) })
	}
}

// TestGone: every Model of the package refuses a request whose caller has
// gone with the context's error, NotSent, and picks or calls no route.
func TestGone(t *testing.T) {
	for name, wrap := range suiteModels() {
		t.Run(name, func(t *testing.T) { modeltest.RunGone(t, wrap) })
	}
}

// suiteModels returns, by name, a builder of each Model of the package
// around the suite's base Model.
func suiteModels() map[string]func(t *testing.T, base portico.Model) portico.Model {
	must := func(t *testing.T, m portico.Model, err error) portico.Model {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	reject := func(*portico.Request, *portico.Response) float64 { return 0 }
	// The suite's request has an image, tools and a contract for class
	// "small": every route here can serve it.
	caps := portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage, Tools: true,
		Schema: portico.SchemaStrict, ModelClass: "small"}
	rt := func(name string, m portico.Model) portico.Route {
		return portico.Route{Name: name, Model: m, Capabilities: caps}
	}
	cases := map[string]func(t *testing.T, base portico.Model) portico.Model{
		"Threshold": func(t *testing.T, base portico.Model) portico.Model {
			th, err := route.NewThreshold(route.ThresholdConfig{
				Strong: rt("strong", base), Weak: rt("weak", base)})
			return must(t, th, err)
		},
		"Router": func(t *testing.T, base portico.Model) portico.Model {
			r, err := route.NewRouter(route.RouterConfig{Routes: []portico.Route{rt("a", base), rt("b", base)}})
			return must(t, r, err)
		},
		"Cascade": func(t *testing.T, base portico.Model) portico.Model {
			c, err := route.NewCascade(route.CascadeConfig{Steps: []route.Step{
				{Route: rt("small", base), Accept: reject, Threshold: 1},
				{Route: rt("large", base)},
			}})
			return must(t, c, err)
		},
		"CascadeStreamLast": func(t *testing.T, base portico.Model) portico.Model {
			c, err := route.NewCascade(route.CascadeConfig{StreamLast: true, Steps: []route.Step{
				{Route: rt("small", base), Accept: reject, Threshold: 1},
				{Route: rt("large", base)},
			}})
			return must(t, c, err)
		},
	}
	for name, s := range map[string]route.Strategy{
		"RoundRobin": route.RoundRobin{}, "LeastInFlight": route.LeastInFlight{},
		"Affinity": route.Affinity{}, "PrefixAware": route.PrefixAware{},
	} {
		cases["Balancer"+name] = func(t *testing.T, base portico.Model) portico.Model {
			b, err := route.NewBalancer(route.BalancerConfig{Strategy: s,
				Replicas: []portico.Route{{Name: "r0", Model: base}, {Name: "r1", Model: base}, {Name: "r2", Model: base}}})
			return must(t, b, err)
		}
	}
	return cases
}
