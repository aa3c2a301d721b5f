package throttle_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/throttle"
)

// TestGone: a call whose caller has gone is refused with the context's
// error, NotSent, next not called.
func TestGone(t *testing.T) {
	modeltest.RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
		return throttle.MustNew(throttle.Config{}).Wrap(base)
	})
}

// TestGoneNotCounted: over a window that rejects, calls whose caller has
// gone are neither drawn nor counted: the window's requests, accepts and
// probability stay as they were. Before, each was drawn and, rejected,
// counted as a request the destination did not accept, raising the
// probability for every live call.
func TestGoneNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The SRE book's rule, under which a rejection counts as a request.
		th := throttle.MustNew(throttle.Config{MaxRejection: 1, MinRequests: -1, Rand: fixed(0)})
		m := th.Wrap(modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503))))
		call(t, m, 4)
		p, requests, accepts := th.Probability()
		if p == 0 {
			t.Fatalf("Probability after 4 failures = 0, want a window that rejects")
		}
		dead, cancel := context.WithCancel(t.Context())
		cancel()
		for range 10 {
			if _, err := m.Generate(dead, req); !errors.Is(err, context.Canceled) {
				t.Fatalf("Generate(canceled) = %v, want context.Canceled", err)
			}
		}
		if p2, r2, a2 := th.Probability(); p2 != p || r2 != requests || a2 != accepts {
			t.Errorf("after 10 canceled calls: probability %v, %d requests, %d accepts; want %v, %d, %d", p2, r2, a2, p, requests, accepts)
		}
	})
}
