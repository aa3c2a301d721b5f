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
	"github.com/portico-llm/portico/spend"
	"github.com/portico-llm/portico/stack"
)

// TestAdmissionSpendRefusalChargesNoRoute: a tenant refused by its spend
// budget takes nothing from the route's shared bucket: only the one call
// it was allowed counts there.
func TestAdmissionSpendRefusalChargesNoRoute(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{})
	direct := newStore(t, srv, Config{})
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 10, OutputTokens: 90}, FinishReason: portico.FinishStop}, nil
	})
	lim := ratelimit.Limits{Requests: 600, Tokens: 10_000, Period: 1000 * time.Hour}
	st, err := stack.New(stack.Config{
		Client: &ratelimit.Config{Limits: lim, Shared: ratelimit.Shared{Store: s.Buckets()}, Sharing: ratelimit.Strict},
		Routes: []stack.Route{{Route: portico.Route{Name: "a", Model: ok, Capabilities: portico.Capabilities{InputPrice: 1, OutputPrice: 1}},
			Limiter: &ratelimit.Config{Limits: lim, Shared: ratelimit.Shared{Store: s.Buckets()}, Sharing: ratelimit.Strict},
			Retry:   retry.Config{Budget: retry.Budget{Shared: retry.Shared{Store: s.Budgets()}}}}},
		Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for range 10 {
		req := &portico.Request{Model: "m", MaxOutputTokens: 10, Identity: portico.Identity{ClientKey: "tenant"},
			Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}
		if _, err := st.Generate(context.Background(), req); portico.RefuserOf(err) == portico.SpendBudget {
			refused++
		}
	}
	s.flush()
	got := math.Round(hget(t, direct, "7:route a|=m", "rl") / 1e6)
	t.Logf("refused by spend %d of 10; route a request level = %v (600 - answered %d expected)", refused, got, 10-refused)
	if got != float64(600-(10-refused)) {
		t.Errorf("route a's request level = %v, want %v: requests refused by the spend budget took route a's requests", got, 600-(10-refused))
	}
}
