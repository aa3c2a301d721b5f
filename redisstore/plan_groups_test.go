package redisstore

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// TestAdmissionNeverChargesAnotherGroupsRoute: requests for group "gb"
// (route b only) leave route a's shared bucket untouched: the one-round-trip
// admission plans the first route only where it is where a request goes.
func TestAdmissionNeverChargesAnotherGroupsRoute(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{})
	direct := newStore(t, srv, Config{})
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 10, OutputTokens: 90}}, nil
	})
	lim := ratelimit.Limits{Requests: 600, Tokens: 10_000, Period: 1000 * time.Hour}
	route := func(name string) stack.Route {
		return stack.Route{Route: portico.Route{Name: name, ModelName: "model-" + name, Model: ok},
			Limiter: &ratelimit.Config{Limits: lim, Shared: ratelimit.Shared{Store: s.Buckets()}, Sharing: ratelimit.Strict},
			Retry:   retry.Config{Budget: retry.Budget{Shared: retry.Shared{Store: s.Budgets()}}}}
	}
	st, err := stack.New(stack.Config{
		Client: &ratelimit.Config{Limits: lim, Shared: ratelimit.Shared{Store: s.Buckets()}, Sharing: ratelimit.Strict},
		Routes: []stack.Route{route("a"), route("b")},
		Groups: []stack.Group{{Name: "ga", Routes: []string{"a"}}, {Name: "gb", Routes: []string{"b"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		req := &portico.Request{Model: "gb", MaxOutputTokens: 1000, Identity: portico.Identity{ClientKey: "tenant"},
			Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}
		resp, err := st.Generate(context.Background(), req)
		if err != nil || resp.Route != "b" {
			t.Fatalf("Generate = %v, %v; want route b's answer", resp, err)
		}
	}
	s.flush()
	n, err := direct.c.Exists(context.Background(), direct.key("rl", "7:route a|=model-a")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		got := math.Round(hget(t, direct, "7:route a|=model-a", "rl") / 1e6)
		t.Errorf("route a's request level = %v after 10 requests to group gb only, want its bucket untouched", got)
	}
}
