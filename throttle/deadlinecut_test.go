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

// TestVerdictUnanswered: the unanswered failures a breaker counts in its run
// only (portico.IsUnanswered) are not counted by the throttle, as every
// deadline cut: an unanswered cut, and a 503 the provider advised not to
// retry (Incompatible, marked). A 400 for the request stays an accept.
// Before, the refusal counted as an accept, as any Incompatible failure: a
// route that refused every request so looked healthy to its throttle.
func TestVerdictUnanswered(t *testing.T) {
	for _, err := range []error{
		&portico.Error{Class: portico.Ambiguous, Err: portico.Unanswered(portico.NewLayerTimeout("share"))},
		&portico.Error{Class: portico.Incompatible, Status: 503, Err: portico.UnansweredRefusal(fmt.Errorf("provider: 503"))},
	} {
		if counted, accepted := verdict(err); counted || accepted {
			t.Errorf("verdict(%v) = %v, %v; want not counted", err, counted, accepted)
		}
	}
	if counted, accepted := verdict(&portico.Error{Class: portico.Incompatible, Status: 400}); !counted || !accepted {
		t.Errorf("verdict(400) = %v, %v; want counted and accepted", counted, accepted)
	}
}
