package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
)

// TestCluster runs every script through a ClusterClient on a Redis
// Cluster, which refuses a script whose keys are in different slots: the
// hash tags keep each script's keys in one.
func TestCluster(t *testing.T) {
	srv := redistest.StartCluster(t)
	c := srv.ClusterClient(t)
	ctx := context.Background()
	// The control: keys in two slots are refused.
	err := c.Eval(ctx, "return 1", []string{"a", "b"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two slots = %v, want CROSSSLOT: the check below would prove nothing", err)
	}
	s, err := New(Config{Client: c, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	lim := &ratelimit.Limits{Tokens: 600, TokenBurst: 100, Requests: 60, RequestBurst: 10, Period: time.Minute}
	if w, _, err := s.Buckets().Take(ctx, "k", lim, 60); err != nil || w != 0 {
		t.Errorf("Take = %v, %v; want admitted", w, err)
	}
	if err := s.Buckets().Settle(ctx, "k", lim, 20, nil, time.Minute); err != nil {
		t.Errorf("Settle = %v", err)
	}
	bl := &retry.BudgetLimits{Deposit: 1e8, Capacity: 2e9, DestinationDeposit: 1e8, DestinationCapacity: 1e9}
	b := s.Budgets()
	for i, want := range []string{"", "destination"} {
		if got, err := b.Spend(ctx, "gpt-4o", "tenant", bl); err != nil || got != want {
			t.Errorf("Spend %d = %q, %v; want %q", i, got, err, want)
		}
	}
	if err := b.Deposit(ctx, "gpt-4o", "tenant", bl); err != nil {
		t.Errorf("Deposit = %v", err)
	}
	rec := effect.Record{State: effect.Pending, Owner: "o", Expires: time.Now().Add(time.Minute)}
	if _, ok, err := s.Effects().PutIfAbsent(ctx, "op/tool/hash", rec); !ok || err != nil {
		t.Errorf("PutIfAbsent = %v, %v", ok, err)
	}
	if ok, err := s.Effects().Update(ctx, "op/tool/hash", rec, effect.Record{State: effect.Completed, Owner: "o", Expires: rec.Expires}); !ok || err != nil {
		t.Errorf("Update = %v, %v", ok, err)
	}
}
