package hedge_test

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

// TestGone: a request whose caller has gone is refused with the context's
// error, NotSent: no attempt, no hedge.
func TestGone(t *testing.T) {
	modeltest.RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
		return hedge.MustNew(hedge.Config{Delay: 5 * ms, MaxInFlight: 3}).Wrap(base)
	})
}

// countingPlan counts the attempts a race asks it to prepare.
type countingPlan struct{ next int }

func (p *countingPlan) Next(context.Context, int, func(string) bool, *hedge.Attempt) (bool, error) {
	p.next++
	return false, nil
}

func (p *countingPlan) Ended(context.Context, int, *hedge.Attempt, *hedge.Result) error { return nil }

// TestGoneRunsNoPlan: Run with a done context prepares no attempt of its
// plan and returns the context's error, index -1.
func TestGoneRunsNoPlan(t *testing.T) {
	h := hedge.MustNew(hedge.Config{Delay: 5 * ms})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &countingPlan{}
	resp, i, err := h.Run(ctx, &portico.Request{}, p)
	if resp != nil || i != -1 || !errors.Is(err, context.Canceled) || p.next != 0 {
		t.Errorf("Run(canceled) = %v, %d, %v, %d attempts prepared; want nil, -1, context.Canceled, 0", resp, i, err, p.next)
	}
}
