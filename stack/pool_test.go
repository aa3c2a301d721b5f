package stack

import (
	"math"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// TestPool: a pool's keys are routes named pool/label, each with its own
// layers (breaker, limiter buckets, hedge destination named after the
// key, whatever r's names were) and its Quota, in a Weighted group of
// the keys' weights (zero is 1); a pool or key New could not tell apart
// is refused.
func TestPool(t *testing.T) {
	a, b := modeltest.NewFake(modeltest.Answer("a")), modeltest.NewFake(modeltest.Answer("b"))
	r := Route{Limiter: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 100}}, Hedge: &hedge.Config{Destination: "x"}}
	r.Breaker.Name, r.Retry.Destination, r.Capabilities.Quota = "x", "x", "x"
	routes, g, err := Pool("gpt", r, Key{Label: "eu", Model: a, Weight: 3}, Key{Label: "us", Model: b, Quota: "acct"})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 2 || routes[0].Name != "gpt/eu" || routes[1].Name != "gpt/us" || routes[0].Capabilities.Quota != "" ||
		routes[1].Capabilities.Quota != "acct" || routes[0].Hedge.Destination != "" || r.Hedge.Destination != "x" {
		t.Fatalf("routes %+v", routes)
	}
	if w, ok := g.Kind.(Weighted); g.Name != "gpt" || strings.Join(g.Routes, ",") != "gpt/eu,gpt/us" || !ok || w[0] != 3 || w[1] != 1 {
		t.Fatalf("group %+v", g)
	}
	s, err := New(Config{Routes: routes, Groups: []Group{g}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Breaker("gpt/eu") == nil || s.Breaker("gpt/eu") == s.Breaker("gpt/us") || s.Limiter("gpt/us") == nil {
		t.Error("each key has its own breaker and limiter")
	}
	for _, c := range []struct {
		pool string
		r    Route
		keys []Key
	}{
		{"", Route{}, []Key{{Label: "a", Model: a}}},
		{"a/b", Route{}, []Key{{Label: "a", Model: a}}},
		{"p", Route{}, nil},
		{"p", Route{Route: portico.Route{Name: "n"}}, []Key{{Label: "a", Model: a}}},
		{"p", Route{}, []Key{{Label: "", Model: a}}},
		{"p", Route{}, []Key{{Label: "a/b", Model: a}}},
		{"p", Route{}, []Key{{Label: "a", Model: a}, {Label: "a", Model: b}}},
		{"p", Route{}, []Key{{Label: "a"}}},
		{"p", Route{}, []Key{{Label: "a", Model: a, Weight: -1}}},
		{"p", Route{}, []Key{{Label: "a", Model: a, Weight: math.NaN()}}},
		{"p", Route{}, []Key{{Label: "a", Model: a, Weight: math.Inf(1)}}},
	} {
		if _, _, err := Pool(c.pool, c.r, c.keys...); err == nil || !strings.HasPrefix(err.Error(), "stack: Pool") {
			t.Errorf("Pool(%q, %d keys) = %v, want a stack: Pool error", c.pool, len(c.keys), err)
		}
	}
}

// TestKeyLabel: a key's label is its hash's first 12 hex digits, never
// the key.
func TestKeyLabel(t *testing.T) {
	if got := KeyLabel("sk-secret"); got != KeyLabel("sk-secret") || len(got) != 16 || strings.Contains(got, "secret") || got == KeyLabel("sk-other") {
		t.Errorf("KeyLabel = %q", got)
	}
}
