package fallback

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/portico-llm/portico"
)

// ErrExhausted is the sentinel of a group that left every route: errors.Is(err,
// fallback.ErrExhausted) holds for the error [Group.Generate] returns then.
var ErrExhausted = errors.New("fallback: every route failed")

// Exhausted lists the routes a failed request went through: the Err of the
// [*portico.Error] that [Group.Generate] returns when every route was left, and
// also when the group stopped at a route's error after leaving others (see
// Stopped). Its Unwrap returns every hop's error, so errors.Is and errors.As
// reach each route's failure; errors.Is(e, ErrExhausted) holds unless Stopped.
type Exhausted struct {
	// Hops are the routes left, in order, with why; Err is nil for a route
	// skipped without being called. When Stopped, the last hop is the route
	// whose error ended the search, with its class as Reason, or "delivered"
	// when what forbade falling back is a chunk that reached the caller.
	Hops []portico.Hop
	// Stopped is true when routes remained but the last hop's error forbade
	// falling back (Permanent, Canceled, Ambiguous with
	// Request.NoAmbiguousRetry, Unusable with Config.StopOnUnusable, any
	// error after a chunk reached the caller).
	Stopped bool
}

// Error lists the routes and reasons, content-free, each once:
// "fallback: every route failed: a (transient), b (unavailable)"; when no
// route was called (each was filtered out, unavailable or out of time), the
// unmet need of each: "fallback: no route can serve the request: a (schema),
// b (context window)"; when Stopped "fallback: stopped at b after: a
// (transient)" (the error around it says b's class), "fallback: stopped at b
// (a chunk had reached the caller) after: ..." when that is why.
func (e *Exhausted) Error() string {
	var b strings.Builder
	sep := ": "
	for _, h := range e.head(&b) {
		b.WriteString(sep + h.Route + " (" + h.Reason + ")")
		sep = ", "
	}
	return b.String()
}

// head writes the beginning of e's message and returns the hops it lists.
func (e *Exhausted) head(b *strings.Builder) []portico.Hop {
	hops := e.Hops
	switch {
	case !e.Stopped && noneCalled(hops):
		b.WriteString(noRoute)
	case e.Stopped && len(hops) > 0:
		return stoppedAt(b, hops)
	default:
		b.WriteString(ErrExhausted.Error())
	}
	return hops
}

// stoppedAt writes the beginning of a Stopped message, at the last of hops,
// and returns the hops before it.
func stoppedAt(b *strings.Builder, hops []portico.Hop) []portico.Hop {
	last := hops[len(hops)-1]
	hops = hops[:len(hops)-1]
	b.WriteString("fallback: stopped at " + last.Route)
	if last.Reason == reasonDelivered {
		b.WriteString(" (a chunk had reached the caller)")
	}
	if len(hops) > 0 {
		b.WriteString(" after")
	}
	return hops
}

// noRoute begins the message of a group that called no route.
const noRoute = "fallback: no route can serve the request"

// noneCalled reports whether every hop was a route skipped without a call.
func noneCalled(hops []portico.Hop) bool {
	return !slices.ContainsFunc(hops, func(h portico.Hop) bool { return h.Err != nil })
}

// noneSent reports whether no hop's call may have been sent: each route was
// skipped, or its error says nothing was sent ([portico.NothingSent]). A
// group's error is NotSent only then.
func noneSent(hops []portico.Hop) bool {
	return !slices.ContainsFunc(hops, func(h portico.Hop) bool { return h.Err != nil && !portico.NothingSent(h.Err) })
}

// Is reports whether target is ErrExhausted and the group ran out of routes
// (not Stopped).
func (e *Exhausted) Is(target error) bool { return target == ErrExhausted && !e.Stopped }

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
	reasonCooldown    = "cooldown"    // cooling down until a Retry-After its route (or quota) announced
	reasonWrong       = "wrong"       // not a hop: Fits found the request wrong on any route (request.wrong)
	reasonBudget      = "cost budget" // estimated cost above what the contract has left
	reasonIndependent = "not independent"
	reasonDeadline    = "deadline"   // too little time left to start it
	reasonHedgeLost   = "hedge lost" // canceled: another attempt of the race answered first
	reasonDelivered   = "delivered"  // the last hop of a group stopped because a chunk had reached the caller
)

// classRank orders the classes for the exhausted error: the higher, the more
// the caller needs to know it (0: any other Class value). See
// [Group.Generate].
var classRank = [math.MaxUint8 + 1]int{
	portico.Incompatible:    1,
	portico.Unusable:        2,
	portico.Rejected:        3,
	portico.RateLimited:     4,
	portico.InvalidResponse: 5,
	portico.Deadline:        6,
	portico.Transient:       7,
	portico.Ambiguous:       8,
}

// skips are what a hop skipped without a call stands for, by its reason:
// its class and who refused it (see [portico.Refuser]): Rejected by the
// route's Health, a breaker in package stack (unavailable), RateLimited by
// a Cooldown (cooling down), Deadline (no time); any other filter is
// Incompatible, NotRefused.
var skips = map[string]struct {
	class portico.Class
	by    portico.Refuser
}{
	reasonUnavailable: {portico.Rejected, portico.CircuitBreaker},
	reasonCooldown:    {portico.RateLimited, portico.Cooldown},
	reasonDeadline:    {portico.Deadline, portico.NotRefused},
}

// hopClass is the class a hop stands for: its error's, or a skip's (skips).
func hopClass(h portico.Hop) portico.Class {
	if h.Err != nil {
		return portico.ClassOf(h.Err)
	}
	if s, ok := skips[h.Reason]; ok {
		return s.class
	}
	return portico.Incompatible
}

// exhausted builds the error of a group that left every route; wait is the
// least time from now until a route left or skipped takes calls again, 0 if
// none. Pure.
func exhausted(hops []portico.Hop, wait time.Duration) *portico.Error {
	class := portico.Incompatible
	retryAfter := wait
	for _, h := range hops {
		if c := hopClass(h); classRank[c] > classRank[class] {
			class = c
		}
	}
	if class != portico.RateLimited && class != portico.Rejected {
		retryAfter = 0
	}
	return &portico.Error{ // no Reason: the Exhausted says what happened, once
		Class:      class,
		RefusedBy:  refuserOf(hops, class),
		Status:     statusOf(hops, class),
		RetryAfter: retryAfter,
		NotSent:    noneSent(hops),
		Err:        &Exhausted{Hops: hops},
	}
}

// refuserOf is who refused the first hop of class (see portico.Refuser):
// its error's RefusedBy, or a skip's (skips); NotRefused without one.
func refuserOf(hops []portico.Hop, class portico.Class) portico.Refuser {
	i := slices.IndexFunc(hops, func(h portico.Hop) bool { return hopClass(h) == class })
	switch {
	case i < 0:
		return portico.NotRefused
	case hops[i].Err != nil:
		return portico.RefuserOf(hops[i].Err)
	}
	return skips[hops[i].Reason].by
}

// statusOf is the HTTP status of the first hop whose error is of class, 0
// if none has one: a limiter outside the group then refunds what was sent
// as for that route's own error (ratelimit.Refund).
func statusOf(hops []portico.Hop, class portico.Class) int {
	for _, h := range hops {
		var pe *portico.Error
		if errors.As(h.Err, &pe) && pe.Class == class && pe.Status != 0 {
			return pe.Status
		}
	}
	return 0
}

// stopped is the error of a group that stops at route r's error err after
// leaving the routes of hops: err itself without hops, else a copy of err's
// first [*portico.Error] whose Err is a Stopped [*Exhausted] listing the hops
// and then r, with reason (err's class when empty), so that errors.As and
// errors.Is still find err and every earlier route's error.
func stopped(hops []portico.Hop, r *portico.Route, err error, reason string) error {
	if len(hops) == 0 {
		return err
	}
	class := portico.ClassOf(err)
	out := &portico.Error{Class: class}
	var pe *portico.Error
	if errors.As(err, &pe) {
		*out = *pe
	}
	out.NotSent = out.NotSent && noneSent(hops)
	all := make([]portico.Hop, len(hops), len(hops)+1)
	copy(all, hops)
	out.Err = &Exhausted{Hops: append(all, portico.Hop{Route: r.Name, Reason: cmp.Or(reason, class.String()), Err: err}), Stopped: true}
	return out
}
