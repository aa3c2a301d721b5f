package spend

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/portico-llm/portico"
)

// down is a Store that always fails.
type down struct{}

var errDown = errors.New("store down")

func (down) Reserve(context.Context, *Account, float64) (Grant, error) { return Grant{}, errDown }
func (down) Settle(context.Context, *Account, float64) error           { return errDown }
func (down) Spent(context.Context, *Account) ([]float64, error)        { return nil, errDown }

type kinds []string

func (k *kinds) Observe(_ context.Context, e portico.Event) { *k = append(*k, e.Reason) }

// TestStoreDown: without FailOpen a failed store refuses (Rejected, by
// the spend budget, nothing sent, wrapping the store's error); with
// FailOpen and 2 instances, each decides on half of each limit: a day
// budget of 1 at 0.4 a call admits two calls (0 and 0.4 spent before
// them), then refuses.
func TestStoreDown(t *testing.T) {
	var ev kinds
	ctx := portico.ContextWithObserver(context.Background(), &ev)
	closed := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 1}}, Routes: []portico.Capabilities{perToken},
		Shared: portico.Shared[Store]{Store: down{}}})
	_, err := closed.Wrap(priced(0.4, nil)).Generate(ctx, req("t", 400))
	if portico.ClassOf(err) != portico.Rejected || portico.RefuserOf(err) != portico.SpendBudget || !portico.NothingSent(err) || !errors.Is(err, errDown) {
		t.Errorf("fail closed = %v, want Rejected by spend_budget, NotSent, wrapping the store's error", err)
	}
	open := mustNew(t, Config{Limits: []Limit{{Window: Day, Amount: 1}}, Routes: []portico.Capabilities{perToken},
		Shared: portico.Shared[Store]{Store: down{}, FailOpen: true, Instances: 2}})
	m := open.Wrap(priced(0.4, nil))
	var got []bool
	for range 3 {
		_, err := m.Generate(ctx, req("t", 400))
		got = append(got, err == nil)
	}
	if !got[0] || !got[1] || got[2] {
		t.Errorf("fail open, admitted = %v, want [true true false]", got)
	}
	if fmt.Sprint(ev) != "[spend:fail_closed spend:fail_open spend:fail_open spend:fail_open spend:day]" {
		t.Errorf("events = %v, want spend:fail_closed, spend:fail_open for each call, the refusal's spend:day", ev)
	}
}
