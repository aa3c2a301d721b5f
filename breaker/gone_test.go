package breaker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// TestGone: a call whose caller has gone is refused with the context's
// error, NotSent, next not called.
func TestGone(t *testing.T) {
	modeltest.RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
		return MustNew(Config{Name: "base"}).Wrap(base)
	})
}

// TestGoneTakesNoProbe: once the open interval has ended, a call whose
// caller has gone neither moves the breaker to half-open nor takes its one
// probe slot; the next live call is the probe, and closes it. Before, the
// dead call took the probe and moved the state.
func TestGoneTakesNoProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var moves []Transition
		b := MustNew(Config{Name: "r", Trip: ConsecutiveFailures(1), OpenFor: time.Second, Probes: 1,
			OnStateChange: func(tr Transition) { moves = append(moves, tr) }})
		s := &scripted{queue: []error{fail(portico.Transient)}}
		m := b.Wrap(s)
		m.Generate(t.Context(), &portico.Request{})
		time.Sleep(time.Second) // the open interval ends: a probe is due
		dead, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := m.Generate(dead, &portico.Request{}); !errors.Is(err, context.Canceled) || portico.ClassOf(err) != portico.Canceled {
			t.Fatalf("Generate(canceled) = %v, want context.Canceled", err)
		}
		if st := b.State(); st != Open || len(moves) != 1 || s.calls != 1 {
			t.Fatalf("after a canceled call: state %v, %d transitions, %d calls; want open, 1 (the trip), 1", st, len(moves), s.calls)
		}
		if _, err := m.Generate(t.Context(), &portico.Request{}); err != nil || b.State() != Closed {
			t.Errorf("live probe = %v, state %v; want its answer and closed", err, b.State())
		}
	})
}
