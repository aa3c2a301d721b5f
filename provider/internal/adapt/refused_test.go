package adapt

import (
	"testing"

	"github.com/portico-llm/portico"
)

// x-should-retry: false is advice about the request: a class that would be
// retried becomes Incompatible (not retried, moves on, no breaker), others
// keep theirs.
func TestNoRetry(t *testing.T) {
	for _, c := range []struct {
		in, want   portico.Class
		wantReason string
	}{
		{portico.Transient, portico.Incompatible, "r (x-should-retry: false)"},
		{portico.RateLimited, portico.Incompatible, "r (x-should-retry: false)"},
		{portico.Unusable, portico.Unusable, "r"},
		{Refused, Refused, "r"},
		{portico.Ambiguous, portico.Ambiguous, "r"},
	} {
		got, reason := NoRetry(c.in, "r")
		if got != c.want || reason != c.wantReason || got.RouteFault() && c.in.Retryable() {
			t.Errorf("NoRetry(%v) = %v %q, want %v %q", c.in, got, reason, c.want, c.wantReason)
		}
	}
	if Refused.RouteFault() || Refused.Retryable() || Refused == portico.Permanent {
		t.Errorf("Refused = %v: want a class no breaker counts, not retried, not Permanent", Refused)
	}
}
