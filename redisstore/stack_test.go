package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// TestStackSharesLimits: the preset's client limiter and route limiter
// switch to the shared buckets with one field each (Config.Client.Shared,
// Route.Limiter.Shared), and its retry budget with retry.Budget.Shared. Two
// instances of a service, each with its own client and Store over one
// Redis: a tenant allowed 3 requests a minute gets 3 across both, not 6;
// a route allowed 4 takes 4 across both tenants and instances, not 8.
func TestStackSharesLimits(t *testing.T) {
	srv := redistest.Start(t)
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			prefix := fmt.Sprintf("stack%v:", shared)
			var stacks [2]*stack.Stack
			calls := 0
			for i := range stacks {
				st := newStore(t, srv, Config{Prefix: prefix})
				route := stack.Route{
					Route: portico.Route{Name: "r", Model: portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
						calls++ // one goroutine: the calls below are sequential
						return &portico.Response{Text: "ok"}, nil
					})},
					Limiter: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 4}},
				}
				cfg := stack.Config{Routes: []stack.Route{route}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 3}}}
				if shared {
					cfg.Client.Shared.Store = st.Buckets()
					cfg.Routes[0].Limiter.Shared.Store = st.Buckets()
					cfg.Routes[0].Retry.Budget.Shared = retry.Shared{Store: st.Budgets()}
				}
				s, err := stack.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				stacks[i] = s
			}
			accepted := map[string]int{}
			for n := range 8 { // tenant a: 4 per instance; then tenant b
				tenant := "a"
				if n >= 6 {
					tenant = "b"
				}
				req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")},
					MaxOutputTokens: 8, Identity: portico.Identity{ClientKey: tenant}}
				if _, err := stacks[n%2].Generate(context.Background(), req); err == nil {
					accepted[tenant]++
				} else if c := portico.ClassOf(err); c != portico.RateLimited {
					t.Fatalf("request %d: %v, want an answer or RateLimited", n, err)
				}
			}
			want := map[string]int{"a": 6, "b": 2} // each instance: 3 for a, then b's one each
			if shared {
				want = map[string]int{"a": 3, "b": 1} // a's 3 across both; the route's 4 in all
			}
			if accepted["a"] != want["a"] || accepted["b"] != want["b"] || calls != want["a"]+want["b"] {
				t.Errorf("accepted %v, calls %d; want %v and as many calls", accepted, calls, want)
			}
		})
	}
}
