package fallback

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/portico-llm/portico"
)

// ErrExhausted is the sentinel of a group that left every route: errors.Is(err,
// fallback.ErrExhausted) holds for the error [Group.Generate] returns then.
var ErrExhausted = errors.New("fallback: every route failed")

// Exhausted is the cause of a group's failure when every route was left: the
// Err of the returned [*portico.Error]. It lists every hop in order. Its
// Unwrap returns every hop's error, so errors.Is and errors.As reach each
// route's failure; errors.Is(e, ErrExhausted) holds.
type Exhausted struct {
	// Hops are the routes left, in order, with why; Err is nil for a route
	// skipped without being called.
	Hops []portico.Hop
}

// Error lists the routes and reasons, content-free:
// "fallback: every route failed: a (transient), b (unavailable)".
func (e *Exhausted) Error() string {
	var b strings.Builder
	b.WriteString(ErrExhausted.Error())
	for i, h := range e.Hops {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(h.Route)
		b.WriteString(" (")
		b.WriteString(h.Reason)
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is ErrExhausted.
func (e *Exhausted) Is(target error) bool { return target == ErrExhausted }

// Unwrap returns the non-nil errors of the hops, in order.
func (e *Exhausted) Unwrap() []error {
	errs := make([]error, 0, len(e.Hops))
	for _, h := range e.Hops {
		if h.Err != nil {
			errs = append(errs, h.Err)
		}
	}
	return errs
}

// The reasons of hops that were skipped without a call.
const (
	reasonUnavailable = "unavailable" // Route.Available false: breaker open
	reasonBudget      = "cost budget" // estimated cost above what the contract has left
	reasonIndependent = "not independent"
	reasonDeadline    = "deadline" // too little time left to start it
	reasonNotRanked   = "not ranked"
)

// classRank orders the classes for the exhausted error: the higher, the more
// the caller needs to know it. See [Group.Generate].
var classRank = [...]int{
	portico.Incompatible:    1,
	portico.Rejected:        2,
	portico.RateLimited:     3,
	portico.InvalidResponse: 4,
	portico.Deadline:        5,
	portico.Transient:       6,
	portico.Ambiguous:       7,
}

// hopClass is the class a hop stands for: its error's, or for a skip, Rejected
// (unavailable), Deadline (no time), or Incompatible (any other filter).
func hopClass(h portico.Hop) portico.Class {
	if h.Err != nil {
		return portico.ClassOf(h.Err)
	}
	switch h.Reason {
	case reasonUnavailable:
		return portico.Rejected
	case reasonDeadline:
		return portico.Deadline
	}
	return portico.Incompatible
}

// exhausted builds the error of a group that left every route. Pure.
func exhausted(hops []portico.Hop) error {
	class := portico.Incompatible
	var retryAfter time.Duration
	for _, h := range hops {
		c := hopClass(h)
		if int(c) < len(classRank) && classRank[c] > classRank[class] {
			class = c
		}
		if ra := portico.RetryAfterOf(h.Err); ra > 0 && (retryAfter == 0 || ra < retryAfter) {
			retryAfter = ra
		}
	}
	if class != portico.RateLimited && class != portico.Rejected {
		retryAfter = 0
	}
	return &portico.Error{
		Class:      class,
		Reason:     "all " + strconv.Itoa(len(hops)) + " routes failed",
		RetryAfter: retryAfter,
		Err:        &Exhausted{Hops: hops},
	}
}
