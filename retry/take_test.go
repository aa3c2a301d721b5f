package retry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
)

// Take draws on the same budgets as the Retrier's retries, the client's (3,
// no refill) and the destination's (4): two tokens taken for alice leave
// her one retry, and then none; bob's takes the destination's last token,
// and carol finds none left.
func TestTake(t *testing.T) {
	r := retry.MustNew(retry.Config{Backoff: retry.Backoff{Schedule: retry.Immediate}, MaxAttempts: 5, Budget: retry.Budget{NoRefill: true, Burst: 3, DestinationBurst: 4}})
	for i := range 2 {
		if !r.Take("m", "alice") {
			t.Fatalf("Take %d from a budget of 3 = false, want true", i+1)
		}
	}
	if got := r.BudgetLevel("m", "alice"); got != 1 {
		t.Errorf("BudgetLevel after two Takes = %v, want 1", got)
	}
	fake := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
	req := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "alice"}}
	_, err := r.Wrap(fake).Generate(context.Background(), req)
	if !errors.Is(err, retry.ErrBudgetExhausted) || fake.Count() != 2 {
		t.Errorf("call after two Takes: %d attempts, %v, want 2 attempts and ErrBudgetExhausted", fake.Count(), err)
	}
	if r.Take("m", "alice") {
		t.Error("Take from an empty budget = true, want false")
	}
	if !r.Take("m", "bob") {
		t.Error("Take from another client's budget = false, want true")
	}
	if r.Take("m", "carol") {
		t.Error("Take from an empty destination budget = true, want false")
	}
	if got := r.BudgetLevel("m", "carol"); got != 0 {
		t.Errorf("BudgetLevel(m, carol) = %v, want 0 (the destination's)", got)
	}
	if off := retry.MustNew(retry.Config{Budget: retry.Budget{Off: true}}); !off.Take("m", "alice") {
		t.Error("Take with the budget off = false, want true")
	}
}
