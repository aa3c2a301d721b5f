package adapt

import (
	"errors"
	"testing"

	"github.com/portico-llm/portico"
)

// x-should-retry: false is advice about the request: a class that would be
// retried becomes Incompatible (not retried, moves on) and its cause is
// marked unanswered (a breaker counts a run of them only), others keep
// their class, reason and cause.
func TestNoRetry(t *testing.T) {
	cause := errors.New("provider said")
	for _, c := range []struct {
		in, want   portico.Class
		wantReason string
		marked     bool
	}{
		{portico.Transient, portico.Incompatible, "r (x-should-retry: false)", true},
		{portico.RateLimited, portico.Incompatible, "r (x-should-retry: false)", true},
		{portico.Unusable, portico.Unusable, "r", false},
		{Refused, Refused, "r", false},
		{portico.Ambiguous, portico.Ambiguous, "r", false},
	} {
		got, reason, err := NoRetry(c.in, "r", cause)
		e := &portico.Error{Class: got, Err: err}
		if got != c.want || reason != c.wantReason || got.RouteFault() && c.in.Retryable() ||
			!errors.Is(err, cause) || err.Error() != "provider said" || portico.IsUnanswered(got, e) != c.marked || errors.Is(e, portico.ErrDeadlineCut) {
			t.Errorf("NoRetry(%v) = %v %q %v (unanswered %v), want %v %q, cause kept, unanswered %v, no deadline cut",
				c.in, got, reason, err, portico.IsUnanswered(got, e), c.want, c.wantReason, c.marked)
		}
	}
	if Refused.RouteFault() || Refused.Retryable() || Refused == portico.Permanent {
		t.Errorf("Refused = %v: want a class no breaker counts, not retried, not Permanent", Refused)
	}
}
