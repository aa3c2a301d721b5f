package route

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/cut"
	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/rules"
)

// Acceptor is a cascade step's acceptance scorer g(x, y) (FrugalGPT): how
// acceptable resp is as an answer to req, compared with the step's threshold
// tau_j. It must be safe for concurrent use, must not modify req or resp, and
// never block for long (it runs after every step's answer).
type Acceptor func(req *portico.Request, resp *portico.Response) float64

// Step is one rung of a [Cascade].
type Step struct {
	// Route answers this step.
	Route portico.Route
	// Accept scores the step's answer; nil accepts every answer (usual for the
	// last step).
	Accept Acceptor
	// Threshold is tau_j: the answer is accepted when Accept(req, resp) >=
	// Threshold. With Accept nil it is unused.
	Threshold float64
}

// NoneAccepted says what a [Cascade] returns when no step's answer is accepted.
type NoneAccepted uint8

// The choices of CascadeConfig.NoneAccepted.
const (
	// NoneAcceptedLast returns the answer of the last step that answered, though
	// rejected, with its Hops listing every rejected or failed step before it.
	// It is the default: the last step is the most capable.
	NoneAcceptedLast NoneAccepted = iota
	// NoneAcceptedError returns an [*portico.Error] of class InvalidResponse
	// wrapping [ErrExhausted] and [ErrNotAccepted].
	NoneAcceptedError
)

// String returns "last" or "error".
func (e NoneAccepted) String() string { return enum.Name(noneAcceptedNames[:], e, "NoneAccepted") }

var noneAcceptedNames = [...]string{NoneAcceptedLast: "last", NoneAcceptedError: "error"}

// CascadeConfig configures a [Cascade].
type CascadeConfig struct {
	// Steps in cost order, cheapest first: each step's InputPrice+OutputPrice
	// must be >= the previous step's. At least one, each with a Model.
	Steps []Step
	// NoneAccepted says what to return when no answer is accepted; the zero value
	// is [NoneAcceptedLast].
	NoneAccepted NoneAccepted
	// StreamLast, with NoneAcceptedLast, lets the last step stream to the caller
	// as it generates (its answer can no longer be rejected); if it then fails,
	// its error is returned as is, since tokens may have reached the caller.
	// False (default) buffers every step, and replays the accepted answer's
	// chunks to OnChunk at the end.
	StreamLast bool
	// Estimator predicts input tokens for the shared Fits filter; nil means
	// portico.DefaultEstimator.
	Estimator portico.Estimator
	// Share is the fraction of the time left before the caller's deadline
	// that a step may use when a later step could follow it, in (0, 1], so
	// that a hung cheap step leaves time for the next; a share under
	// DefaultStepMinAttempt is not applied. Zero means DefaultStepShare; 1
	// gives each step the whole deadline. Applies only when the context has
	// a deadline. See [ErrStepTimeout].
	Share float64
}

// The defaults of a cascade's steps' shares, the fallback group's own.
const (
	DefaultStepShare      = 0.5625
	DefaultStepMinAttempt = 100 * time.Millisecond
	DefaultStepFaultAfter = 10 * time.Second
)

// stepCauses are the causes of a step's share context, indexed by the
// cut its end is (cut.Of): ErrStepTimeout's forms.
var stepCauses = cut.Causes(ErrStepTimeout)

// Cascade is FrugalGPT's LLM cascade (Chen, Zaharia and Zou, 2023): it
// calls its steps in cost order and stops at the first answer y whose
// acceptance score g(x, y) >= tau_j.
//
// A step that does not fit the request ([portico.Capabilities.Fits]) or is
// unavailable (breaker open) is skipped unasked. A step that fails with a
// route error (transient, rate limited, incompatible, invalid, ambiguous,
// rejected, unusable, or neither answer nor error) moves on; a Permanent or
// Canceled error (Fits' before any step, or a step's) and the caller's
// deadline end the cascade at once. The answer is
// stamped with [portico.Route.Stamp]: Route is the step that answered, Hops
// the steps left, and Cost adds every step's price (rejected answers and
// billed failures included). A stream is buffered and the accepted answer
// replayed (see the package documentation). Cascade is safe for concurrent
// use.
type Cascade struct {
	steps      []Step
	exhausted  NoneAccepted
	streamLast bool
	est        portico.Estimator
	share      float64
}

// NewCascade returns a Cascade for cfg, or an error starting "route:" when
// there are no steps, a step has no Model or invalid Capabilities
// ([portico.Capabilities.Validate]), steps are not in cost order, or Share
// is outside [0, 1].
func NewCascade(cfg CascadeConfig) (*Cascade, error) {
	if err := cmp.Or(rules.First(
		rules.If(len(cfg.Steps) == 0, "route: NewCascade needs at least one step"),
		rules.If(!(cfg.Share >= 0 && cfg.Share <= 1),
			"route: NewCascade CascadeConfig.Share "+strconv.FormatFloat(cfg.Share, 'g', -1, 64)+" is outside (0, 1]"),
	), checkSteps(cfg.Steps)); err != nil {
		return nil, err
	}
	return &Cascade{steps: slices.Clone(cfg.Steps), exhausted: cfg.NoneAccepted, streamLast: cfg.StreamLast,
		est: cmp.Or(cfg.Estimator, portico.DefaultEstimator), share: cmp.Or(cfg.Share, DefaultStepShare)}, nil
}

// checkSteps returns NewCascade's error for a step without a Model or with
// invalid Capabilities, or for steps out of cost order.
func checkSteps(steps []Step) error {
	prev := 0.0
	for i, s := range steps {
		p := s.Route.Capabilities.InputPrice + s.Route.Capabilities.OutputPrice
		if err := cmp.Or(
			rules.First(rules.If(portico.IsNil(s.Route.Model), "route: NewCascade step "+strconv.Itoa(i)+" has a nil Model")),
			checkCapabilities("NewCascade", s.Route),
			rules.First(rules.If(p < prev, "route: NewCascade steps must be in cost order, cheapest first")),
		); err != nil {
			return err
		}
		prev = p
	}
	return nil
}

// Generate runs the cascade on req as described on [Cascade]. Errors:
//   - the caller's cancellation or deadline, as the step returned it, or
//     from [portico.FromContext] when ctx ends between steps (no further step
//     is started); a step's Permanent error, as returned (through
//     [portico.AfterSent] when an earlier step may have been sent); a
//     Permanent error when req is nil, or Fits' when req is wrong on any
//     route (no step is called);
//   - with [NoneAcceptedError], when answers came but none was accepted: class
//     InvalidResponse wrapping [ErrExhausted] and [ErrNotAccepted];
//   - when no step answered at all: the class and RefusedBy of the last
//     step's error (the class and Status of the last step that may have
//     been sent when the last sent nothing; NotSent only when none was
//     sent), wrapping [ErrExhausted] and every step's error, or
//     Rejected/Incompatible wrapping [ErrNoRoute] when every step was
//     skipped; when that class is
//     RateLimited or Rejected, its RetryAfter is the least of the steps'
//     Retry-After hints and their Health's RetryAfter.
func (c *Cascade) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := refuse(ctx, req); err != nil {
		return nil, err
	}
	w := cascadeWalk{c: c, req: req, buffered: req, n: c.est.EstimateInputTokens(req)}
	if req.OnChunk != nil {
		w.hold = &held{ctx: ctx}
		w.buffered = w.hold.Watch(req, w.hold)
	}
	for j := range c.steps {
		if resp, done, err := w.step(ctx, j); done {
			return resp, err
		}
	}
	return w.end()
}

// cascadeWalk is one request's way down a Cascade's steps.
type cascadeWalk struct {
	c          *Cascade
	req        *portico.Request
	buffered   *portico.Request  // req, watched by hold when it streams
	hold       *held             // with OnChunk: the current step's chunks, held back until accepted
	n          int               // the estimated input tokens
	skips                        // every step left, and the least time until one takes calls again
	billed     float64           // what the steps left cost: rejected answers, billed failures
	last       *portico.Response // latest answer, rejected (stamped: its Cost is its price)
	lastRoute  *portico.Route
	lastHop    int // index in hops of last's "not accepted" hop
	lastChunks []string
	lastErr    error
	called     bool
}

// step runs step j: it skips it, or calls it and keeps its answer, and
// reports whether the cascade ends here, with the answer or error.
func (w *cascadeWalk) step(ctx context.Context, j int) (*portico.Response, bool, error) {
	c := w.c
	s := &c.steps[j]
	rt := &s.Route
	if call, stop := w.ready(ctx, rt); stop != nil || !call {
		return nil, stop != nil, stop
	}
	takeLast, live := c.takes(j)
	resp, err := w.call(ctx, j, live)
	if err != nil {
		err = w.failed(ctx, rt, err, live)
		return nil, err != nil, err
	}
	if s.accepts(w.req, resp) || takeLast {
		resp, err = c.finish(w.req, rt.Stamp(resp, w.hops, w.billed), w.hold.held(), live)
		return resp, true, err
	}
	w.rejected(ctx, rt, resp)
	return nil, false, nil
}

// takes reports whether step j's answer is taken even when not accepted
// (the final step, with NoneAcceptedLast), and whether it then streams to
// the caller as it comes (StreamLast).
func (c *Cascade) takes(j int) (last, live bool) {
	last = j == len(c.steps)-1 && c.exhausted == NoneAcceptedLast
	return last, last && c.streamLast
}

// ready reports whether step rt is to be called, having recorded it
// skipped if not, or the error the cascade stops with: the request is
// wrong on any route, or the caller gave up while an earlier step ran.
func (w *cascadeWalk) ready(ctx context.Context, rt *portico.Route) (call bool, stop error) {
	h, ok, stop := check(rt, w.req, w.n)
	switch {
	case stop != nil:
		return false, stop
	case !ok:
		w.skip(ctx, rt, h)
		return false, nil
	case w.called: // do not start (and pay for) another step
		return true, portico.FromContext(ctx)
	}
	return true, nil
}

// accepts reports whether s takes resp, its answer to req.
func (s *Step) accepts(req *portico.Request, resp *portico.Response) bool {
	return s.Accept == nil || s.Accept(req, resp) >= s.Threshold
}

// call calls step j under its share of the deadline, streaming to the
// caller when live, else into hold.
func (w *cascadeWalk) call(ctx context.Context, j int, live bool) (*portico.Response, error) {
	rt := &w.c.steps[j].Route
	sreq := w.buffered
	if live {
		sreq = w.req
	}
	w.called = true
	if w.hold != nil {
		w.hold.chunks = w.hold.chunks[:0]
	}
	sctx, cancel := w.c.stepContext(ctx, j, w.req, w.n)
	defer cancel()
	return generate(sctx, rt, sreq) // a broken Model's nil answer: a route fault, try the next step
}

// failed records rt's failure err and returns nil to move on, or the error
// the cascade stops with: another step cannot fix it, or (live) tokens may
// have reached the caller.
func (w *cascadeWalk) failed(ctx context.Context, rt *portico.Route, err error, live bool) error {
	class := portico.ClassOf(err)
	if live || stops(ctx, class) {
		return portico.AfterSent(err, sentOf(w.hops))
	}
	if u := portico.UsageOf(err); u != nil {
		w.billed += rt.Capabilities.Cost(*u) // a failed call that was billed
	}
	w.wait = earliest(w.wait, portico.RetryAfterOf(err)) // a step's Retry-After
	w.lastErr = err
	w.hops = append(w.hops, portico.Hop{Route: rt.Name, Reason: class.String(), Err: err})
	portico.Observe(ctx, portico.Event{Kind: portico.EventFallback, Route: rt.Name, Class: class, Reason: class.String()})
	return nil
}

// stops reports whether a step's failure of class ends the cascade, as
// another step cannot fix it: the caller canceled, its deadline passed, or
// the request is wrong on any route (Permanent).
func stops(ctx context.Context, class portico.Class) bool {
	return class == portico.Canceled || class == portico.Permanent || class == portico.Deadline && ctx.Err() != nil
}

// rejected records resp, rt's answer that its step did not accept: billed,
// and kept as the latest answer.
func (w *cascadeWalk) rejected(ctx context.Context, rt *portico.Route, resp *portico.Response) {
	w.last, w.lastRoute, w.lastHop = rt.Stamp(resp, nil, 0), rt, len(w.hops)
	w.billed += w.last.Cost
	w.lastChunks = append(w.lastChunks[:0], w.hold.held()...)
	w.hops = append(w.hops, notAccepted(rt.Name))
	portico.Observe(ctx, portico.Event{Kind: portico.EventFallback, Route: rt.Name, Class: portico.InvalidResponse, Reason: reasonNotAccepted})
}

// end is the outcome of a cascade whose steps all failed, were skipped or
// were not accepted (see Generate).
func (w *cascadeWalk) end() (*portico.Response, error) {
	switch {
	case w.last != nil && w.c.exhausted == NoneAcceptedLast:
		// The final step failed or was skipped: the latest (rejected) answer
		// is the best there is; its own hop goes, the others stay in order.
		hops := append(w.hops[:w.lastHop], w.hops[w.lastHop+1:]...)
		w.last.Cost = w.billed // its own price is in billed already
		return w.c.finish(w.req, w.lastRoute.Stamp(w.last, hops, 0), w.lastChunks, false)
	case w.last != nil: // the not-accepted hops wrap ErrNotAccepted
		return nil, &portico.Error{Class: portico.InvalidResponse, Reason: "no answer accepted", Err: w.causes()}
	case !w.called:
		return nil, noRoute(w.hops, w.wait)
	}
	return nil, w.noAnswer()
}

// noAnswer is the error of a cascade whose called steps all failed.
func (w *cascadeWalk) noAnswer() error {
	// The last step's class, or, when it sent nothing after a step that
	// may have been sent, that step's: the request may have been billed.
	sent := sentOf(w.hops)
	from := w.lastErr
	if sent != nil && portico.NothingSent(from) {
		from = sent
	}
	class, status := portico.ClassOf(from), 0
	var pe *portico.Error
	if errors.As(from, &pe) {
		status = pe.Status
	}
	wait := w.wait // a Retry-After hint only where later may work
	if class != portico.RateLimited && class != portico.Rejected {
		wait = 0
	}
	return &portico.Error{Class: class, Status: status, RefusedBy: portico.RefuserOf(w.lastErr), RetryAfter: wait,
		NotSent: sent == nil, Err: w.causes()}
}

// causes joins ErrExhausted and the error of each step left.
func (w *cascadeWalk) causes() error { return joinHops(ErrExhausted, w.hops) }

// sentOf returns the error of the last step in hops that may have been
// sent ([portico.NothingSent]), nil when none was.
func sentOf(hops []portico.Hop) error {
	for i := len(hops) - 1; i >= 0; i-- {
		if e := hops[i].Err; e != nil && !portico.NothingSent(e) {
			return e
		}
	}
	return nil
}

// stepContext returns the context step j is called under: ctx, bounded by
// the step's share of the time left when a later step could follow (a
// share of 1 is all of it: none).
func (c *Cascade) stepContext(ctx context.Context, j int, req *portico.Request, n int) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	left := time.Until(dl)
	d := time.Duration(float64(left) * c.share)
	if d >= left || d < DefaultStepMinAttempt || !c.followed(j, req, n) {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, stepCauses[cut.Of(d, DefaultStepFaultAfter, false)])
}

// followed reports whether a step after j could serve req now.
func (c *Cascade) followed(j int, req *portico.Request, n int) bool {
	for k := j + 1; k < len(c.steps); k++ {
		if _, ok, _ := check(&c.steps[k].Route, req, n); ok {
			return true
		}
	}
	return false
}

func notAccepted(name string) portico.Hop {
	return portico.Hop{Route: name, Reason: reasonNotAccepted,
		Err: &portico.Error{Class: portico.InvalidResponse, Model: name, Reason: reasonNotAccepted, Err: ErrNotAccepted}}
}

// finish returns resp, stamped, and for a streaming caller whose answer was
// buffered, first replays the answer's chunks as the step produced them (its
// Text in one chunk if the step did not stream).
func (c *Cascade) finish(req *portico.Request, resp *portico.Response, chunks []string, streamed bool) (*portico.Response, error) {
	if req.OnChunk == nil || streamed {
		return resp, nil
	}
	if len(chunks) == 0 && resp.Text != "" {
		chunks = []string{resp.Text}
	}
	for _, t := range chunks {
		if err := req.OnChunk(portico.Chunk{Text: t}); err != nil {
			return nil, &portico.Error{Class: portico.Canceled, Reason: "chunk callback failed", Err: err}
		}
	}
	return resp, nil
}

// held watches a buffered cascade's steps: it holds each chunk back, keeping
// its text, and reports it with [portico.Progress] so that a retry layer
// outside sees a live stream.
type held struct {
	portico.StreamWatch
	ctx    context.Context
	chunks []string // the current step's
}

// GateChunk keeps c's text and holds c back.
func (h *held) GateChunk(c portico.Chunk, _ bool) (bool, error) {
	h.chunks = append(h.chunks, c.Text)
	portico.Progress(h.ctx, c)
	return false, nil
}

// held returns the current step's chunks; nil for a nil h.
func (h *held) held() []string {
	if h == nil {
		return nil
	}
	return h.chunks
}
