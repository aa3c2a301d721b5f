package route

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/portico-llm/portico"
)

// Sentinels of package route, wrapped in the [*portico.Error] values its layers
// return so that errors.Is finds them.
var (
	// ErrNoRoute: no candidate both fits the request ([portico.Capabilities.Fits])
	// and is available. The error's Class is [portico.Rejected], RefusedBy
	// [portico.CircuitBreaker], when at least one fitting candidate was only
	// unavailable (its breaker is open: later may work),
	// [portico.Incompatible] when none fits at all.
	ErrNoRoute = errors.New("route: no route fits and is available")
	// ErrNotAccepted: a cascade step answered but its acceptance score was below
	// the step's threshold (FrugalGPT's g(x, y) < tau_j). It appears in
	// [portico.Hop.Err] for rejected steps and in the error a [Cascade] returns
	// when configured with [NoneAcceptedError].
	ErrNotAccepted = errors.New("route: answer not accepted")
	// ErrExhausted: every step of a cascade was tried and none produced an
	// accepted answer (or any answer, under [NoneAcceptedLast]).
	ErrExhausted = errors.New("route: cascade exhausted")
	// ErrStepTimeout is the cause (context.Cause) of a cascade step's context
	// when its share of the caller's deadline ran out (CascadeConfig.Share).
	// It matches [portico.ErrLayerTimeout], so the step's error is Ambiguous
	// (or Transient before sending) and the cascade moves on; one cut after
	// less than [DefaultStepFaultAfter] matches [portico.ErrDeadlineCut] and
	// [portico.ErrUnanswered] too, which breakers count in their run of
	// consecutive failures only, as a fallback group's short share.
	ErrStepTimeout error = portico.NewLayerTimeout("route: cascade step timeout")
)

// errNilRequest is returned by every Model and picker of the package for a nil
// *Request: the root's shared portico.ErrNilRequest (Permanent).
var errNilRequest = portico.ErrNilRequest

// refuse is the error of a call no route is picked or called for: a nil
// req, or a caller that has gone ([portico.Gone]); nil otherwise.
func refuse(ctx context.Context, req *portico.Request) error {
	if req == nil {
		return errNilRequest
	}
	return portico.Gone(ctx)
}

// errNilResponse stands for a route whose Model broke its contract by
// returning neither a Response nor an error: an InvalidResponse naming the
// route and wrapping portico.ErrNilResponse.
func errNilResponse(route string) error {
	return &portico.Error{Class: portico.InvalidResponse, Model: route, Err: portico.ErrNilResponse}
}

// generate calls rt's Model with rt's form of req ([portico.Route.RequestFor])
// and returns what it returned (see answered).
func generate(ctx context.Context, rt *portico.Route, req *portico.Request) (*portico.Response, error) {
	resp, err := rt.Model.Generate(ctx, rt.RequestFor(req))
	return resp, answered(rt, resp, err)
}

// answered is err, the error rt's Model returned with resp, or
// errNilResponse when it returned neither answer nor error.
func answered(rt *portico.Route, resp *portico.Response, err error) error {
	if err == nil && resp == nil {
		return errNilResponse(rt.Name)
	}
	return err
}

// errPanic is the outcome fed back to a picker when the chosen Model panics
// (the panic then goes on up): a failure of the route, as package breaker
// counts it.
var errPanic error = &portico.Error{Class: portico.Transient, Reason: "panic"}

// Hop reasons used by this package, content-free.
const (
	reasonUnavailable = "unavailable"
	reasonNotAccepted = "not accepted"
)

// skipHop records a route skipped unasked: unavailable, or unfit (the reason of
// Fits' error).
func skipHop(name string, fitErr error) portico.Hop {
	if fitErr == nil {
		return portico.Hop{Route: name, Reason: reasonUnavailable}
	}
	var pe *portico.Error
	reason := "incompatible"
	if errors.As(fitErr, &pe) && pe.Reason != "" {
		reason = pe.Reason
	}
	return portico.Hop{Route: name, Reason: reason, Err: fitErr}
}

// noRoute is the error when no candidate fits and is available: Rejected
// by CircuitBreaker with RetryAfter wait if one was merely unavailable,
// else Incompatible; its Err joins ErrNoRoute and the Fits errors.
func noRoute(hops []portico.Hop, wait time.Duration) error {
	// No Reason: the class and ErrNoRoute say it, and each route's error
	// says why it was not a candidate.
	err := joinHops(ErrNoRoute, hops)
	if !slices.ContainsFunc(hops, func(h portico.Hop) bool { return h.Err == nil }) { // none unavailable
		return &portico.Error{Class: portico.Incompatible, Err: err}
	}
	return &portico.Error{Class: portico.Rejected, RefusedBy: portico.CircuitBreaker, RetryAfter: wait, Err: err}
}

// joinHops joins sentinel and the error of each hop that has one.
func joinHops(sentinel error, hops []portico.Hop) error {
	errs := make([]error, 1, len(hops)+1)
	errs[0] = sentinel
	for _, h := range hops {
		if h.Err != nil {
			errs = append(errs, h.Err)
		}
	}
	return portico.Join(errs...)
}

// skips are the hops of routes skipped unasked, with the least time until
// one skipped as unavailable takes calls again (its Health's RetryAfter).
type skips struct {
	hops []portico.Hop
	wait time.Duration
}

// add records rt, skipped with hop h (see check).
func (s *skips) add(rt *portico.Route, h portico.Hop) {
	if h.Err == nil { // unavailable, not unfit
		s.wait = earliest(s.wait, rt.RetryAfter())
	}
	s.hops = append(s.hops, h)
}

// skip records rt, skipped with hop h, and reports it as an
// [portico.EventFallback].
func (s *skips) skip(ctx context.Context, rt *portico.Route, h portico.Hop) {
	s.add(rt, h)
	portico.Observe(ctx, portico.Event{Kind: portico.EventFallback, Route: rt.Name, Class: hopClass(h), Reason: h.Reason})
}

// earliest returns the lesser of two waits, 0 standing for none.
func earliest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// estimate returns info.InputTokens, or est's estimate when it is 0.
func estimate(est portico.Estimator, info *PickInfo) int {
	if info.InputTokens > 0 {
		return info.InputTokens
	}
	return est.EstimateInputTokens(info.Request)
}

// hopClass is the class reported for a hop: Rejected for an unavailable route,
// the class of its error otherwise.
func hopClass(h portico.Hop) portico.Class {
	if h.Err == nil {
		return portico.Rejected
	}
	return portico.ClassOf(h.Err)
}

// check applies the shared filter, Fits then availability, as package
// fallback does: ok, or the hop saying why not (Err nil: unavailable), or
// stop, Fits' Permanent error (the request is wrong on any route).
func check(r *portico.Route, req *portico.Request, nIn int) (h portico.Hop, ok bool, stop error) {
	if err := r.Capabilities.Fits(req, nIn); err != nil {
		if portico.ClassOf(err) == portico.Permanent {
			return portico.Hop{}, false, err
		}
		return skipHop(r.Name, err), false, nil
	}
	if !r.Available() {
		return skipHop(r.Name, nil), false, nil
	}
	return portico.Hop{}, true, nil
}
