// Package cut is the one rule that says whose fault it is when a layer that
// divides the caller's deadline between routes ends a call at the end of
// the part it gave it: package fallback's shares, its bound on a stream's
// gap between signs of progress, and package route's cascade steps.
//
// A cut after at least the layer's FaultAfter (fallback.Config.FaultAfter,
// route.DefaultStepFaultAfter) is the route's fault: hung or too slow for any
// caller, its breaker counts it. A shorter cut may be no more than the
// caller's short deadline. When it was all the time the caller gave (no
// other route followed) it is that deadline, [portico.ErrDeadlineCut],
// which no breaker counts; when the layer chose it while another route
// stood ready, it is an unanswered cut, [portico.ErrUnanswered], which a
// breaker counts in its run of consecutive failures only, so that a route
// that answers nobody opens and one that answers other callers does not.
package cut

import (
	"time"

	"github.com/portico-llm/portico"
)

// Cut says whose fault a layer's cut of a call is.
type Cut uint8

// The cuts, which index a layer's [Causes].
const (
	// Fault is the route's: the layer's timeout sentinel itself.
	Fault Cut = iota
	// Caller is the caller's short deadline: [portico.DeadlineCut].
	Caller
	// Unanswered is a short part the layer chose while another route
	// followed: [portico.Unanswered].
	Unanswered
)

// Of returns the cut of a call ended after allowance, the part of the
// caller's deadline the layer gave it, for a layer whose cuts are faults
// from faultAfter on (0: every cut is). last reports that the allowance was
// all the time the caller gave, no other route following.
func Of(allowance, faultAfter time.Duration, last bool) Cut {
	switch {
	case allowance >= faultAfter:
		return Fault
	case last:
		return Caller
	}
	return Unanswered
}

// Causes returns timeout, a layer's own timeout sentinel
// ([portico.NewLayerTimeout]), in the form of each Cut, indexed by Cut. A
// layer makes them once and gives the one [Of] picks as the cause of the
// context it ends.
func Causes(timeout error) [3]error {
	return [3]error{timeout, portico.DeadlineCut(timeout), portico.Unanswered(timeout)}
}
