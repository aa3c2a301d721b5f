package throttle

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
	"github.com/portico-llm/portico/internal/rules"
	"github.com/portico-llm/portico/internal/window"
)

// Defaults used for zero [Config] fields.
const (
	// DefaultK is the multiplier of accepts, 2: the SRE book's recommended
	// value, at which a destination sees about twice the requests it accepts
	// before the client sheds any.
	DefaultK = 2
	// DefaultWindow is the span over which requests and accepts are counted:
	// the SRE book's two minutes.
	DefaultWindow = 2 * time.Minute
	// DefaultMaxRejection is the highest rejection probability, 0.9:
	// failsafe-go's adaptive throttler's default maximum rejection rate, so
	// that a tenth of the calls keep probing a destination that refuses all.
	DefaultMaxRejection = 0.9
	// DefaultMinRequests is how many requests the window must count before
	// anything is rejected, 10: fewer say too little about the destination.
	DefaultMinRequests = 10
)

// Config configures a [Throttle]. The zero Config is usable: K = 2 over a
// two-minute window, rejecting at most 9 calls in 10, and none before the
// window counts 10 requests.
type Config struct {
	// K is the multiplier of accepts in the rejection probability
	// max(0, (requests - K*accepts) / (requests + 1)): the client starts to
	// reject once the destination accepted fewer than 1/K of the requests.
	// Lower is more aggressive. Zero means [DefaultK] (2); below 1, NaN or
	// infinite is an error. K is a Default request's
	// (portico.Request.Priority): a Critical request's multiplier is 2*K,
	// a Sheddable one's K/2 but at least 1, so that as the destination
	// accepts less, Sheddable calls are rejected first and Critical ones
	// last.
	K float64
	// Window is the span over which requests and accepts are counted, kept
	// in 32 buckets of Window/32. Zero means [DefaultWindow] (2 minutes);
	// below 32 ns is an error.
	Window time.Duration
	// MaxRejection caps the rejection probability, in (0, 1], so that some
	// calls keep reaching a destination that refuses every request and learn
	// when it heals; under a cap the Throttle's own rejections are not
	// counted as requests (see the package documentation). Zero means
	// [DefaultMaxRejection] (0.9); 1 is the SRE book's rule: no cap,
	// rejections counted; below 0, above 1 or NaN is an error.
	MaxRejection float64
	// MinRequests is how many requests the window must count before any
	// call is rejected. Zero means [DefaultMinRequests] (10); negative means
	// none, the SRE book's rule.
	MinRequests int
	// Rand returns uniform random numbers in [0, 1) for the rejection draw.
	// It must be safe for concurrent use. Nil means math/rand/v2's Float64;
	// tests pass a seeded source.
	Rand func() float64
}

// Throttle is Google SRE's client-side adaptive throttling for one
// destination: it counts, over a sliding window, the requests the caller
// made and the ones the destination accepted, and rejects a new request
// locally with probability max(0, (requests - K*accepts) / (requests + 1)),
// capped at Config.MaxRejection, once the window counts Config.MinRequests
// requests. Build one per destination with [New] (package stack builds one per
// route); its method value Wrap is the [portico.Middleware], and the Models
// it wraps share its window. A Throttle is safe for concurrent use.
type Throttle struct {
	k    float64
	max  float64 // highest rejection probability, (0, 1]
	min  uint64  // requests the window counts before rejecting
	rand func() float64
	w    counts
}

// New returns a Throttle configured by cfg, with zero fields taking their
// defaults. It returns an error, starting with "throttle:" and naming the
// field, for a K below 1 (or not finite), a Window below 32 ns, or a
// MaxRejection outside [0, 1].
func New(cfg Config) (*Throttle, error) {
	k, win, maxRej := cmp.Or(cfg.K, DefaultK), cmp.Or(cfg.Window, DefaultWindow), cmp.Or(cfg.MaxRejection, DefaultMaxRejection)
	if err := rules.First(
		rules.If(!(k >= 1 && k <= math.MaxFloat64), "throttle: Config.K must be a finite number of at least 1"),
		rules.If(win < numBuckets, "throttle: Config.Window below 32ns"),
		rules.If(!(maxRej > 0 && maxRej <= 1), "throttle: Config.MaxRejection must be in [0, 1]"),
	); err != nil {
		return nil, err
	}
	minReq := uint64(max(0, cmp.Or(cfg.MinRequests, DefaultMinRequests)))
	t := &Throttle{k: k, max: maxRej, min: minReq, rand: cfg.Rand}
	t.w.win = window.NewTime(mono.Now(), win/numBuckets, numBuckets)
	if t.rand == nil {
		t.rand = rand.Float64
	}
	return t, nil
}

// MustNew is like [New] but panics on a configuration error; for
// package-level stacks and examples.
func MustNew(cfg Config) *Throttle { return portico.Must(New(cfg)) }

// ErrThrottled is the sentinel of a call the Throttle rejected: errors.Is
// holds for the [portico.Rejected] error Wrap returns then, whose Err is a
// [*Error] with the window's counts.
var ErrThrottled = errors.New("throttle: rejected by client-side throttling")

// Error says why a call was throttled: the counts of the destination's
// window when it was rejected. errors.Is(e, ErrThrottled) holds.
type Error struct {
	Requests    int     // requests counted in the window before this one, rejected ones included
	Accepts     int     // requests the destination accepted
	Probability float64 // the rejection probability they gave, in (0, 1)
}

// Error says "throttle: destination accepted A of R requests in the window,
// rejecting with probability P".
func (e *Error) Error() string {
	return "throttle: destination accepted " + strconv.Itoa(e.Accepts) + " of " + strconv.Itoa(e.Requests) +
		" requests in the window, rejecting with probability " + strconv.FormatFloat(e.Probability, 'f', 3, 64)
}

// Is reports whether target is [ErrThrottled].
func (e *Error) Is(target error) bool { return target == ErrThrottled }

// Wrap returns next wrapped in the throttle; the method value t.Wrap is a
// [portico.Middleware]. Wrap panics if next is nil, a typed nil included ([portico.IsNil]).
//
// The returned Model rejects a call, without calling next, with the
// probability the window gives: a [portico.Rejected] error (Model the
// request's, RefusedBy [portico.Throttle], NotSent) wrapping a [*Error] and so
// [ErrThrottled], reported to the context's Observer as a
// [portico.EventRateLimitReject] with Reason "throttle". Otherwise it calls
// next and counts the outcome: an answer, a [portico.Permanent] or
// [portico.Incompatible] error as accepted; a route fault (the throttle
// column of [portico.FaultOf]) as not accepted, as a rejection of its own
// is under the book's rule (MaxRejection 1; under a cap a rejection is not
// counted); the caller's [portico.Canceled] or [portico.Deadline] and other
// layers' [portico.Rejected] not at all (see the package documentation).
// next's result is returned as it is, except that neither Response nor
// error becomes [portico.ErrNilResponse], a route fault. A nil request
// fails at once with [portico.ErrNilRequest], and a context done already
// with [portico.Gone]'s error, neither drawn nor counted.
func (t *Throttle) Wrap(next portico.Model) portico.Model {
	portico.PanicIfNil(next, "throttle: Wrap of a nil Model")
	return &model{t: t, next: next}
}

type model struct {
	t    *Throttle
	next portico.Model
}

// Generate costs, while the window holds accepts only, two atomic loads
// before the call and one atomic add after it: no clock read (but every
// 64th accepted call's), no lock, no allocation.
func (m *model) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := portico.Unstarted(ctx, req); err != nil {
		return nil, err // a nil req, or the caller has gone: neither drawn nor counted
	}
	t := m.t
	w := &t.w
	if w.isDirty() {
		if err := t.admit(ctx, req, w); err != nil {
			return nil, err
		}
	}
	resp, err := portico.Answer(m.next.Generate(ctx, req))
	t.record(w, err)
	return resp, err
}

// admit draws the rejection of a call to a dirty window: nil to let it go,
// or the error that rejects it, counted as a request not accepted under the
// book's rule (no cap) and not counted under a cap. When the window holds
// accepts only again it becomes clean.
func (t *Throttle) admit(ctx context.Context, req *portico.Request, w *counts) error {
	seq := w.fails.Load()
	now := mono.Now()
	w.stamp(now)
	requests, accepts := w.totals(now)
	if requests == accepts {
		w.clean(seq)
		return nil
	}
	p := t.probability(requests, accepts, req.Priority)
	if p == 0 || t.rand() >= p {
		return nil
	}
	if t.max == 1 { // the book's rule: a rejection is a request not accepted; under a cap, not counted
		w.refused(now)
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitReject, Route: req.Model, Class: portico.Rejected, Reason: "throttle"})
	return &portico.Error{Class: portico.Rejected, RefusedBy: portico.Throttle, Model: req.Model, NotSent: true,
		Err: &Error{Requests: int(requests), Accepts: int(accepts), Probability: p}}
}

// record counts the outcome err of a call to w (see Wrap).
func (t *Throttle) record(w *counts, err error) {
	counted, accepted := verdict(err)
	switch {
	case !counted:
	case accepted && !w.isDirty():
		if w.pending.Add(1) >= batch {
			w.stamp(mono.Now())
		}
	case accepted:
		now := mono.Now()
		w.stamp(now)
		w.win.Add(0, now, window.Counts{1, 1})
	default:
		now := mono.Now()
		w.stamp(now)
		w.refused(now)
	}
}

// verdict reads portico.FaultOf's throttle column: whether a call that
// ended with err counts in the window, and whether as accepted (see Wrap).
func verdict(err error) (counted, accepted bool) {
	switch f, _ := portico.FaultOf(err); f {
	case portico.FaultNone, portico.FaultRequest:
		return true, true // answered, or refused for the request's fault
	case portico.FaultRoute:
		return true, false
	}
	return false, false
}

// Probability returns the probability with which a call of Default
// priority would be rejected now, and the requests and accepts the window
// counts. For metrics and tests; safe for concurrent use.
func (t *Throttle) Probability() (p float64, requests, accepts int) {
	r, a := t.w.totals(mono.Now())
	return t.probability(r, a, portico.Default), int(r), int(a)
}

// probability is the rejection probability of a call of priority prio for
// requests and accepts in the window: the SRE book's with prio's
// multiplier (see Config.K), 0 below the minimum of requests, capped at
// the maximum.
func (t *Throttle) probability(requests, accepts uint64, prio portico.Priority) float64 {
	if requests < t.min {
		return 0
	}
	return min(t.max, probability(requests, accepts, kOf(t.k, prio)))
}

// kOf is the multiplier of accepts for a call of priority p when a
// Default call's is k: 2k for Critical (at most math.MaxFloat64, finite
// as k is, so that k*0 accepts is 0), max(1, k/2) for Sheddable.
func kOf(k float64, p portico.Priority) float64 {
	switch p.Level() {
	case portico.Critical:
		return min(2*k, math.MaxFloat64)
	case portico.Sheddable:
		return max(1, k/2)
	}
	return k
}
