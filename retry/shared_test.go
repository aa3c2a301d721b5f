package retry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/portico-llm/portico"
)

// fakeBudgets is a BudgetStore that records its calls and fails while down.
type fakeBudgets struct {
	mu       sync.Mutex
	deposits int
	spends   int
	lim      BudgetLimits
	refuse   string
	down     bool
	dests    []string // the destinations named, in order
}

func (f *fakeBudgets) Deposit(_ context.Context, dest, client string, lim *BudgetLimits) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("down")
	}
	f.deposits++
	f.lim = *lim
	f.dests = append(f.dests, dest)
	return nil
}

func (f *fakeBudgets) Spend(_ context.Context, dest, client string, lim *BudgetLimits) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return "", errors.New("down")
	}
	f.spends++
	f.lim = *lim
	f.dests = append(f.dests, dest)
	return f.refuse, nil
}

func TestSharedConfig(t *testing.T) {
	f := &fakeBudgets{}
	for _, tc := range []struct {
		s    Shared
		want string
	}{
		{Shared{Store: f}, ""},
		{Shared{Store: f, FailOpen: true, Instances: 3}, ""},
		{Shared{Store: f, Instances: -1}, "negative Config.Budget.Shared.Instances"},
		{Shared{FailOpen: true, Instances: 1}, "without a Store"},
		{Shared{Store: f, FailOpen: true}, "FailOpen without Instances"},
		{Shared{Store: f, Instances: 2}, "Instances without FailOpen"},
	} {
		_, err := New(Config{Budget: Budget{Shared: tc.s}})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), "retry: ") || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("New(Shared %+v) = %v, want an error naming %q", tc.s, err, tc.want)
		}
	}
}

// TestSharedBudgetLimits: the store is given the budgets in units of
// 10^-9 retries, is asked to deposit for each new request (not with
// NoRefill), and its refusal refuses the retry, naming its budget.
func TestSharedBudgetLimits(t *testing.T) {
	f := &fakeBudgets{refuse: "destination"}
	fail := transient()
	var attempts int
	m := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Budget: Budget{Ratio: 0.1, Burst: 20, Shared: Shared{Store: f}}}).Wrap(
		portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { attempts++; return nil, fail }))
	obs := &budgetObserver{}
	_, err := m.Generate(portico.ContextWithObserver(context.Background(), obs), userReq)
	if !errors.Is(err, ErrBudgetExhausted) || !strings.Contains(err.Error(), "destination budget exhausted") || attempts != 1 {
		t.Errorf("Generate = %v after %d attempts, want the destination budget exhausted after 1", err, attempts)
	}
	want := BudgetLimits{Deposit: 100_000_000, Capacity: 20 * unit, DestinationDeposit: 100_000_000, DestinationCapacity: 100 * unit}
	if f.deposits != 1 || f.spends != 1 || f.lim != want {
		t.Errorf("store: %d deposits, %d spends, limits %+v; want 1, 1, %+v", f.deposits, f.spends, f.lim, want)
	}
	// Take (a hedge's token) spends from the store too.
	r := mustNew(t, Config{Budget: Budget{Shared: Shared{Store: f}}})
	if r.Take("m", "c") || f.spends != 2 {
		t.Errorf("Take with the store refusing = true or %d spends, want false after 2", f.spends)
	}
	f2 := &fakeBudgets{}
	m = mustNew(t, Config{Budget: Budget{NoRefill: true, ClientOnly: true, Shared: Shared{Store: f2}}}).Wrap(okModel())
	m.Generate(context.Background(), userReq)
	if f2.deposits != 0 {
		t.Errorf("NoRefill: %d deposits, want none", f2.deposits)
	}
	// Fail closed: a store that fails refuses the retry ("shared").
	f.down = true
	attempts = 0
	_, err = mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Budget: Budget{Shared: Shared{Store: f}}}).Wrap(
		portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { attempts++; return nil, fail })).Generate(
		portico.ContextWithObserver(context.Background(), obs), userReq)
	if !errors.Is(err, ErrBudgetExhausted) || !strings.Contains(err.Error(), "shared budget unavailable") || attempts != 1 {
		t.Errorf("Generate with the store down = %v after %d attempts, want no retry", err, attempts)
	}
	if obs.n["retry:fail_closed"] != 2 { // the deposit and the spend
		t.Errorf("fail-closed events = %d, want 2", obs.n["retry:fail_closed"])
	}
}

type budgetObserver struct{ n map[string]int }

func (o *budgetObserver) Observe(_ context.Context, e portico.Event) {
	if e.Kind == portico.EventSharedStore {
		if o.n == nil {
			o.n = map[string]int{}
		}
		o.n[e.Reason]++
	}
}

// TestSharedNames: the store sees each destination after the Retrier's
// Shared.Name, length-prefixed even when empty, so Retriers of two names
// never share a budget, even one whose destination spells the other's
// name.
func TestSharedNames(t *testing.T) {
	f := &fakeBudgets{}
	for _, name := range []string{"", "a", "6:client|"} {
		r := mustNew(t, Config{Budget: Budget{Shared: Shared{Store: f, Name: name}}})
		r.Take("m", "c")
	}
	r := mustNew(t, Config{Budget: Budget{Shared: Shared{Store: f}}, Destination: "6:client|m"})
	r.Wrap(okModel()).Generate(context.Background(), userReq)
	want := []string{"0:|m", "1:a|m", "9:6:client||m", "0:|6:client|m"}
	if strings.Join(f.dests, " ") != strings.Join(want, " ") {
		t.Errorf("destinations in the store = %q, want %q", f.dests, want)
	}
}
