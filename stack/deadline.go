package stack

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/internal/due"
)

// direct is the stack's model for its one route, called without a
// group: after the group's filter (fits), under the deadline the context
// carries (package due), stamped as the group stamps.
type direct struct {
	r   portico.Route
	est portico.Estimator
}

func (d *direct) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := fits(&d.r, req, d.est); err != nil {
		return nil, err
	}
	ctx, cancel := due.Bound(ctx)
	defer cancel()
	resp, err := portico.Answer(d.r.Model.Generate(ctx, d.r.RequestFor(req)))
	if err != nil {
		return nil, err
	}
	// As the fallback group does with several routes, so that one
	// route and two stamp the same answer the same.
	return d.r.Stamp(resp, nil, 0), nil
}

// fits is the group's filter for a stack of one route r: the error the
// group would return for a request r's Capabilities cannot serve
// ([portico.Capabilities.Fits] with est's input estimate, made only when
// the window or a MaxCost needs it), or nil. One rule for one route and
// many: Incompatible, NotSent, wrapping a [fallback.Exhausted] whose one
// hop names the unmet need.
func fits(r *portico.Route, req *portico.Request, est portico.Estimator) error {
	in := 0
	if r.Capabilities.ContextWindow > 0 || (req.Contract != nil && req.Contract.MaxCost > 0) {
		in = est.EstimateInputTokens(req)
	}
	err := r.Capabilities.Fits(req, in)
	if err == nil {
		return nil
	}
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class == portico.Permanent {
		return err // wrong on any route: the deadline layer found it first
	}
	return &portico.Error{Class: portico.Incompatible, NotSent: true,
		Err: &fallback.Exhausted{Hops: []portico.Hop{{Route: r.Name, Reason: pe.Reason}}}}
}

// estimator is the stack's Estimator: e, or, when nil, a
// [portico.Calibrated] [portico.CharEstimator] of the stack's own, which
// its limiters teach (they are given it when theirs is nil; the client
// limiter only when no route's limiter is, see clientEstimator), kept by
// Update as the Cooldowns are.
func estimator(e portico.Estimator, m *memo) portico.Estimator {
	if e != nil {
		return e
	}
	c, _ := remember(m, "estimator", struct{}{}, func(struct{}) (*portico.Calibrated, error) {
		return portico.NewCalibrated(portico.CharEstimator{}, portico.Calibration{}) // the defaults: no error
	})
	return c
}

// clientEstimator is the client limiter's view of the stack's Estimator
// est: [portico.EstimateOnly] when a route's limiter is given est, which
// then learns from the call (under the route's model) so that one call
// is one sample; est itself when no route's limiter is.
func clientEstimator(routes []Route, est portico.Estimator) portico.Estimator {
	for i := range routes {
		if l := routes[i].Limiter; l != nil && l.Estimator == nil {
			return portico.EstimateOnly(est)
		}
	}
	return est
}

// costOf is a same-route Hedger's Config.Cost for a route of Capabilities
// caps: its estimate of a request's cost, as the group's (fallback's
// Capabilities.Fits), with est's input tokens.
func costOf(caps portico.Capabilities, est portico.Estimator) func(*portico.Request) float64 {
	return func(req *portico.Request) float64 { return caps.EstimateCost(req, est.EstimateInputTokens(req)) }
}

// deadline returns the end-to-end deadline layer of Config.Deadline d and
// Config.MaxRequestBytes maxBytes (zero: their defaults; negative: none).
// It refuses a request that [portico.Request.Validate] refuses or one
// larger than maxBytes ([portico.Request.Size]), then bounds ctx by d and
// by the request's Contract.Deadline (the earliest applies, as does ctx's
// own): with carry, as a deadline ctx carries to the layers below
// (package due; see Stack.carries), else as a context's. With neither set
// it passes the call through untouched.
func deadline(d time.Duration, maxBytes int, carry bool) portico.Middleware {
	d = orDefault(d, DefaultDeadline)
	maxBytes = orDefault(maxBytes, DefaultMaxRequestBytes)
	return func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			if err := refused(req, maxBytes); err != nil {
				return nil, err // wrong on any route: none is called
			}
			at, ok := endOf(ctx, limitOf(d, req.Contract))
			switch {
			case !ok:
				return next.Generate(ctx, req)
			case carry:
				return next.Generate(due.With(ctx, at), req)
			}
			ctx, cancel := context.WithDeadline(ctx, at)
			defer cancel()
			return next.Generate(ctx, req)
		})
	}
}

// refused is the Permanent error of a request no route may take: one
// that [portico.Request.Validate] refuses, or one larger than maxBytes
// (zero: no limit); nil otherwise.
func refused(req *portico.Request, maxBytes int) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if maxBytes > 0 && req.Size() > maxBytes {
		return &portico.Error{Class: portico.Permanent, Model: req.Model, Reason: "request size", NotSent: true,
			Err: errors.New(strconv.Itoa(req.Size()) + " bytes, above the stack's " + strconv.Itoa(maxBytes))}
	}
	return nil
}

// limitOf is the earlier of the stack's deadline d and the Contract k's
// (nil, or a Deadline of zero: none), zero when neither is set.
func limitOf(d time.Duration, k *portico.Contract) time.Duration {
	if k == nil || k.Deadline <= 0 {
		return d
	}
	if d == 0 {
		return k.Deadline
	}
	return min(d, k.Deadline)
}

// endOf returns when a request entering now ends after limit (zero:
// never), from one reading of the clock, and false when it never does or
// ctx's deadline, its own or carried (package due), is not later: no
// context is derived then.
func endOf(ctx context.Context, limit time.Duration) (time.Time, bool) {
	if limit <= 0 {
		return time.Time{}, false
	}
	at := time.Now().Add(limit)
	if dl, ok := due.Deadline(ctx); ok && !dl.After(at) {
		return time.Time{}, false
	}
	return at, true
}

// orDefault is v, or def when v is zero, or zero (none) when v is negative.
func orDefault[T ~int | ~int64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
