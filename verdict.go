package portico

import (
	"errors"

	"github.com/portico-llm/portico/internal/enum"
)

// Fault says whose fault the outcome of a call is: the verdict [FaultOf]
// gives, which every layer that learns from outcomes reads.
type Fault uint8

// The verdicts, in the order [FaultOf] tries them after a nil error.
const (
	// FaultNone: the route answered (a nil error).
	FaultNone Fault = iota
	// FaultUnanswered: an unanswered failure ([IsUnanswered]): alone one
	// request's, a run of them with no answer between the route's.
	FaultUnanswered
	// FaultCaller: the caller's: its cancellation, its deadline, a layer's
	// cut of a short share of it ([IsDeadlineCut]), a context done before
	// the call ([Gone]).
	FaultCaller
	// FaultRequest: the request's: [Permanent], [Incompatible], an
	// unclassified error, an answer refused for what the request asked of
	// it ([ErrAnswerRefused]).
	FaultRequest
	// FaultRoute: the route's: a class with [Class.RouteFault].
	FaultRoute
	// FaultLocal: nobody's that a layer counts: a refusal of a layer of
	// this process ([Rejected]), which never reached the route, or an
	// *Error of class OK.
	FaultLocal
)

var faultNames = [...]string{
	FaultNone:       "none",
	FaultUnanswered: "unanswered",
	FaultCaller:     "caller",
	FaultRequest:    "request",
	FaultRoute:      "route",
	FaultLocal:      "local",
}

// String returns the fault's name: "none", "unanswered", "caller",
// "request", "route" or "local".
func (f Fault) String() string { return enum.Name(faultNames[:], f, "Fault") }

// FaultOf returns whose fault a call that ended with err is, and err's
// class ([ClassOf]). The rule is written here once; each layer reads the
// verdict in a few lines, the columns below (— is not counted):
//
//	outcome                       Fault       breaker  throttle  adaptive  rank   hedge
//	nil                           none        success  accept    sample    success
//	ErrUnanswered (a cut)         unanswered  run      —         —         —      goes on
//	ErrUnanswered (a refusal)     unanswered  run      —         —         —      stops
//	Canceled, Deadline, cut       caller      —        —         —         —      stops
//	ErrAnswerRefused, Invalid*    request     —        accept    sample    —      goes on
//	ErrAnswerRefused, other class request     —        accept    its class —      stops
//	Permanent, Incompatible, else request     —        accept    —         —      stops
//	Transient, RateLimited, Amb.  route       failure  request   drop      fault  goes on
//	InvalidResponse               route       failure  request   sample    fault  goes on
//	Unusable                      route       failure  request   —         fault  stops
//	Rejected, an *Error of OK     local       —        —         —         —      goes on
//
// (A breaker's run counts in its consecutive failures only; a throttle's
// request is one counted without an accept; Invalid* is class
// InvalidResponse; "its class" is the adaptive column of the row of the
// refused answer's class.)
// Why the columns differ is told in the package documentation (Errors).
func FaultOf(err error) (Fault, Class) {
	if err == nil {
		return FaultNone, OK
	}
	c := ClassOf(err)
	switch {
	case IsUnanswered(c, err): // before cuts: an unanswered cut is a cut too
		return FaultUnanswered, c
	case IsDeadlineCut(c, err), c == Canceled, c == Deadline:
		return FaultCaller, c
	case c == Permanent, c == Incompatible, errors.Is(err, ErrAnswerRefused):
		return FaultRequest, c
	case c.RouteFault():
		return FaultRoute, c
	}
	return FaultLocal, c
}
