package throttle

import (
	"fmt"
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

// TestVerdictRefusedAnswer: an answer an acceptance check refused
// (portico.ErrAnswerRefused) was an answer: the destination accepted the
// call, and the throttle counts it so.
func TestVerdictRefusedAnswer(t *testing.T) {
	err := &portico.Error{Class: portico.InvalidResponse, Err: fmt.Errorf("schema: %w", portico.ErrAnswerRefused)}
	if counted, accepted := verdict(err); !counted || !accepted {
		t.Errorf("verdict(refused answer) = %v, %v; want counted and accepted", counted, accepted)
	}
	if counted, accepted := verdict(&portico.Error{Class: portico.InvalidResponse}); !counted || accepted {
		t.Errorf("verdict(malformed answer) = %v, %v; want counted, not accepted", counted, accepted)
	}
}
