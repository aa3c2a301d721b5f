package throttle

import (
	"testing"

	"github.com/portico-llm/portico"
)

// TestVerdictDeadlineCut: a layer's cut of a short share of the caller's
// deadline (portico.ErrDeadlineCut, as fallback gives for a share shorter
// than Config.FaultAfter) says nothing of the destination's load: breakers
// ignore it, and so should the throttle. Counted as a request not accepted,
// one tenant's short deadlines raise the rejection probability for every
// tenant of the route.
func TestVerdictDeadlineCut(t *testing.T) {
	for _, class := range []portico.Class{portico.Ambiguous, portico.Transient} {
		err := &portico.Error{Class: class, Err: portico.Join(portico.ErrLayerTimeout, portico.ErrDeadlineCut)}
		if counted, _ := verdict(err); counted {
			t.Errorf("verdict(%v cut of a short share) counted, want ignored as the caller's deadline", class)
		}
	}
}
