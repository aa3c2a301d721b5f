package retry

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/portico-llm/portico"
)

// model is a Model wrapped by a Retrier.
type model struct {
	r    *Retrier
	next portico.Model
}

// Generate deposits the request in the budgets and runs the attempts.
func (m *model) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := portico.Unstarted(ctx, req); err != nil {
		return nil, err // a nil req, or the caller has gone: no deposit, no attempt
	}
	r := m.r
	r.depositReq(ctx, req)
	if o := req.Overrides; o != nil {
		r = r.overridden(o)
	}
	return r.run(ctx, req, m.next)
}

// budgetPair is a call's two budget buckets: its (destination, client)'s,
// nil when the budgets are off, and its destination's, nil when off too or
// ClientOnly.
type budgetPair struct{ client, dest *bucket }

// depositReq credits req to the budgets, when they are on and req is a
// new request: a hedge is not, its token was taken when it was sent. The
// buckets are not kept: a retry looks them up again (see run).
func (r *Retrier) depositReq(ctx context.Context, req *portico.Request) {
	if r.budget == nil || req.Hedge {
		return
	}
	if r.shared != nil {
		r.sharedDeposit(ctx, r.destOf(req), req.Identity.ClientKey)
		return
	}
	r.deposit(r.destOf(req), req.Identity.ClientKey)
}

// deposit credits a new request of (dest, client) to the budgets in the
// process: an atomic load each when they are full.
func (r *Retrier) deposit(dest, client string) {
	h := r.homeOf(dest)
	r.depositClient(h, dest, client)
	r.depositDest(h, dest)
}

// depositClient is deposit's credit to the client's bucket, h's when h,
// dest's home, holds it.
func (r *Retrier) depositClient(h *budgetPair, dest, client string) {
	if h != nil && client == "" {
		h.client.deposit(r.budget.depositAmt, r.budget.capacity)
	} else if c := r.budget.forDeposit(dest, client); c != nil { // nil: full, no room to keep it
		c.deposit(r.budget.depositAmt, r.budget.capacity)
	}
}

// depositDest is deposit's credit to the destination's bucket, h's when
// h, dest's home, is not nil.
func (r *Retrier) depositDest(h *budgetPair, dest string) {
	switch {
	case r.dests == nil:
	case h != nil:
		h.dest.deposit(r.dests.depositAmt, r.dests.capacity)
	default:
		r.dests.get(dest, "").deposit(r.dests.depositAmt, r.dests.capacity)
	}
}

// pairOf returns the budget buckets of (dest, client), creating them full
// if needed; the budgets must be on. It does not allocate for existing
// keys.
func (r *Retrier) pairOf(dest, client string) budgetPair {
	h := r.homeOf(dest)
	if h == nil {
		p := budgetPair{client: r.budget.get(dest, client)}
		if r.dests != nil {
			p.dest = r.dests.get(dest, "")
		}
		return p
	}
	p := *h
	if client != "" {
		p.client = r.budget.get(dest, client)
	}
	return p
}

// homeOf returns the Retrier's home buckets when dest is their
// destination, nil otherwise (see Retrier.home): the destination's, and
// the client's for a request without a ClientKey.
func (r *Retrier) homeOf(dest string) *budgetPair {
	if h := r.home; h != nil && dest == r.dest {
		return h
	}
	return nil
}

// destOf is req's destination: Config.Destination, or its Model.
func (r *Retrier) destOf(req *portico.Request) string { return cmp.Or(r.dest, req.Model) }

// retryable reports whether an attempt error of class c may be retried for req.
func (r *Retrier) retryable(c portico.Class, req *portico.Request) bool {
	switch c {
	case portico.Transient, portico.RateLimited:
		return true
	case portico.Ambiguous:
		return !req.NoAmbiguousRetry && !r.noAmbiguous
	case portico.InvalidResponse:
		return r.retryInvalid
	}
	return false
}

// fits reports whether an attempt may start after waiting wait, given ctx's
// deadline: some time, and at least MinAttemptTime, must be left.
func (r *Retrier) fits(ctx context.Context, wait time.Duration) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return true
	}
	left := time.Until(dl) - wait
	return left > 0 && left >= r.minAttempt
}

// call is run's state for one call: the errors of the attempts before the
// last, and the previous backoff wait (DecorrelatedJitter's); while a retry
// is decided, its index i, the failed attempt's error last and its class
// cls, and the destination of the budgets.
type call struct {
	r       *Retrier
	req     *portico.Request
	earlier []error
	prev    time.Duration
	i       int
	last    error
	cls     portico.Class
	dest    string
}

// run drives the attempts.
func (r *Retrier) run(ctx context.Context, req *portico.Request, next portico.Model) (*portico.Response, error) {
	c := &call{r: r, req: req, prev: r.base}
	start := streamStart(req)
	var lastErr error
	for i := 0; ; i++ {
		actx, err := c.begin(ctx, i, lastErr)
		if err != nil {
			return nil, err
		}
		resp, delivered, err := r.attempt(actx, req, next, start)
		resp, err = portico.Answer(resp, err)
		if err == nil {
			return resp, nil
		}
		if delivered {
			return nil, err
		}
		lastErr = err
	}
}

// streamStart is when a streamed call started, for its first-chunk event;
// zero, and no clock read, for a call that does not stream.
func streamStart(req *portico.Request) time.Time {
	if req.OnChunk == nil {
		return time.Time{}
	}
	return time.Now()
}

// begin returns the context of attempt i, which follows the failed lastErr
// when i > 0, or the call's error when the attempt may not start.
func (c *call) begin(ctx context.Context, i int, lastErr error) (context.Context, error) {
	r := c.r
	if i == 0 {
		return ctx, r.admitFirst(ctx)
	}
	if err := c.retry(ctx, i, lastErr); err != nil {
		return nil, err
	}
	actx := portico.ContextWithAttempt(ctx, portico.Attempt{Index: i, ID: attemptID()})
	if !r.fits(ctx, 0) {
		return nil, noTimeLeft(lastErr, 0, c.earlier)
	}
	c.earlier = append(c.earlier, lastErr)
	return actx, nil
}

// admitFirst returns ErrNoTimeLeft's error when the deadline leaves less
// than MinAttemptTime for the first attempt; only an expired deadline
// stops it without one (then the attempt fails with the context's error).
func (r *Retrier) admitFirst(ctx context.Context) error {
	if r.minAttempt > 0 && !r.fits(ctx, 0) {
		return noTimeLeft(nil, 0, nil)
	}
	return nil
}

// retry decides whether attempt i follows the failed lastErr, and waits
// for it: nil when it may start, else the call's error.
func (c *call) retry(ctx context.Context, i int, lastErr error) error {
	r, req := c.r, c.req
	c.i, c.last, c.cls, c.dest = i, lastErr, portico.ClassOf(lastErr), r.destOf(req)
	if err := c.stop(ctx); err != nil {
		return err
	}
	delay, hinted, cooling := c.delay(ctx)
	if err := c.fits(ctx, delay, hinted, cooling); err != nil {
		return err
	}
	// A retry takes its token only when it is made: from the process's
	// buckets now, given back if the wait ends it; from a store, which has
	// no refund, once the wait is over.
	if err := c.spend(ctx, false); err != nil {
		return err
	}
	r.announce(ctx, Info{Attempt: i, Class: c.cls, Delay: delay, RetryAfter: hinted, Err: lastErr,
		Destination: c.dest, ClientKey: req.Identity.ClientKey})
	if err := c.wait(ctx, delay); err != nil {
		return err
	}
	return c.spend(ctx, true)
}

// spend takes the retry's token (see takeToken) when the budgets take it
// at this moment: the process's before the wait, a store's after it
// (afterWait); nil when they take none now.
func (c *call) spend(ctx context.Context, afterWait bool) error {
	r := c.r
	if r.budget == nil || (r.shared != nil) != afterWait {
		return nil
	}
	return c.takeToken(ctx)
}

// stop returns the call's error when no attempt may follow: the failed
// one's error is not retryable, the context is done, or MaxAttempts were
// made.
func (c *call) stop(ctx context.Context) error {
	r := c.r
	if r.maxAttempts == 1 {
		return c.last // a layer that never retries is transparent
	}
	if !r.retryable(c.cls, c.req) {
		return c.notRetried()
	}
	if err := portico.FromContext(ctx); err != nil {
		return canceledDuring(err, c.last, c.earlier)
	}
	if c.i < r.maxAttempts {
		return nil
	}
	return surface(c.last, portico.OK, ErrAttemptsExhausted, "retry: "+attempts(c.i)+" failed", c.earlier)
}

// notRetried is the error of a call that stops at an error it does not
// retry: that error itself after the first attempt, else with the earlier
// attempts' errors kept (one may have been sent, or billed).
func (c *call) notRetried() error {
	if len(c.earlier) == 0 {
		return c.last
	}
	return surface(c.last, portico.OK, nil, "retry: stopped after "+attempts(c.i), c.earlier)
}

// delay returns the wait before the retry: the failed attempt's
// Retry-After (hinted), else a draw from the schedule; and the route's
// cooldown, which replaces it, as a hint, when it ends later (an outer
// routing layer's cooldown, perhaps another instance's Retry-After).
func (c *call) delay(ctx context.Context) (delay time.Duration, hinted bool, cooling time.Duration) {
	r := c.r
	delay = portico.RetryAfterOf(c.last)
	hinted = delay > 0
	if !hinted {
		delay = r.backoffDelay(c.i, c.prev, r.draw())
		c.prev = delay
	}
	cooling = portico.CooldownFromContext(ctx)
	if cooling > delay {
		return cooling, true, cooling
	}
	return delay, hinted, cooling
}

// fits returns the call's error when it may not wait delay before the
// retry: a hint too long (see hintTooLong; cooling == delay when the
// route's cooldown set it), or a backoff that leaves no time for the
// attempt.
func (c *call) fits(ctx context.Context, delay time.Duration, hinted bool, cooling time.Duration) error {
	r := c.r
	if !hinted {
		if !r.fits(ctx, delay) {
			return noTimeLeft(c.last, delay, c.earlier)
		}
		return nil
	}
	why := r.hintTooLong(ctx, 0, delay, cooling == delay)
	if why == "" {
		return nil
	}
	var set time.Duration // the cooldown, when it set the hint
	if cooling == delay {
		set = cooling
	}
	return tooLong(c.last, why, c.i, set, c.earlier)
}

// wait sleeps delay before the retry, and then for as long as the route
// cools down (it may have started during the wait), under the same rules
// for what is left of it and the whole wait. A wait that ends the call
// gives back the token taken from the process's budgets.
func (c *call) wait(ctx context.Context, delay time.Duration) error {
	r := c.r
	for waited := time.Duration(0); delay > 0; {
		if !sleep(ctx, delay) {
			r.unspend(c.dest, c.req)
			return canceledDuring(portico.FromContext(ctx), c.last, c.earlier)
		}
		waited += delay
		if delay = portico.CooldownFromContext(ctx); delay > 0 {
			if why := r.hintTooLong(ctx, waited, delay, true); why != "" {
				r.unspend(c.dest, c.req)
				return tooLong(c.last, why, c.i, delay, c.earlier)
			}
		}
	}
	return nil
}

// sleep waits d; false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// takeToken takes the retry's token, or returns the error of a call the
// budget ends, ErrBudgetExhausted's.
func (c *call) takeToken(ctx context.Context) error {
	r, i, cls := c.r, c.i, c.cls
	which := r.spendToken(ctx, c.dest, c.req.Identity.ClientKey)
	if which == "" {
		return nil
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventBudgetExhausted, Route: c.dest, Attempt: i, Class: cls, Reason: which})
	r.log.LogAttrs(ctx, slog.LevelDebug, "retry budget exhausted", slog.String("destination", c.dest),
		slog.String("budget", which), slog.Int("attempt", i), slog.String("class", cls.String()))
	what := which + " budget exhausted"
	if which == "shared" {
		what = "shared budget unavailable"
	}
	e := surface(c.last, portico.OK, ErrBudgetExhausted, "retry: "+what+" after "+attempts(i), c.earlier)
	e.RefusedBy = portico.RetryBudget
	return e
}

// spendToken takes one token from the budgets of (dest, client), the
// store's or the process's (found again: no allocation, and off the first
// attempt's path), or names the budget that refused (see spend).
func (r *Retrier) spendToken(ctx context.Context, dest, client string) string {
	if r.shared != nil {
		return r.sharedSpend(ctx, dest, client)
	}
	p := r.pairOf(dest, client)
	return spend(r.dests, p.client, p.dest)
}

// unspend gives back the token takeToken took from the process's buckets
// for a retry its wait ended; a store's is not taken yet.
func (r *Retrier) unspend(dest string, req *portico.Request) {
	if r.budget != nil && r.shared == nil {
		r.Refund(dest, req.Identity.ClientKey)
	}
}

// hintTooLong returns why the call may not wait delay, a Retry-After
// (cooling: the route's cooldown) in place before its next attempt, after
// it waited waited already, or "" when it may: the whole wait is longer
// than Backoff.MaxRetryAfter or than the wait an outer layer allows
// ([portico.MaxWaitFromContext]: it has another route), or delay longer
// than the deadline leaves room for.
func (r *Retrier) hintTooLong(ctx context.Context, waited, delay time.Duration, cooling bool) string {
	what := hintName(cooling)
	if waited+delay > r.maxRetryAfter {
		return what + " too long"
	}
	if most, ok := portico.MaxWaitFromContext(ctx); ok && waited+delay > most {
		// An outer layer has another route: better to move on now.
		return what + " longer than the wait worth taking in place"
	}
	if !r.fits(ctx, delay) {
		return what + " beyond the deadline"
	}
	return ""
}

// hintName names the wait a hint asks for: the route's cooldown (cooling)
// or a Retry-After.
func hintName(cooling bool) string {
	if cooling {
		return "route cooling down"
	}
	return "retry-after"
}

// tooLong is the RateLimited error of a call that ends rather than wait
// for a hint (see hintTooLong) after attempt i; cooling, when positive, is
// the route's cooldown that set the hint, its RetryAfter.
func tooLong(last error, why string, i int, cooling time.Duration, earlier []error) error {
	e := surface(last, portico.RateLimited, ErrRetryAfterTooLong, "retry: "+why+" after "+attempts(i), earlier)
	if cooling > 0 {
		e.RetryAfter = cooling
	}
	return e
}

// announce reports a retry to the hook, the Observer and the log.
func (r *Retrier) announce(ctx context.Context, info Info) {
	if r.onRetry != nil {
		r.onRetry(info)
	}
	reason := "backoff"
	if info.RetryAfter {
		reason = "retry_after"
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventRetry, Route: info.Destination, Attempt: info.Attempt,
		Class: info.Class, Delay: info.Delay, Reason: reason})
	r.log.LogAttrs(ctx, slog.LevelDebug, "retry", slog.String("destination", info.Destination),
		slog.Int("attempt", info.Attempt), slog.String("class", info.Class.String()),
		slog.Duration("delay", info.Delay), slog.String("reason", reason))
}

// attempt makes one attempt and reports whether any chunk reached the caller.
func (r *Retrier) attempt(ctx context.Context, req *portico.Request, next portico.Model, start time.Time) (*portico.Response, bool, error) {
	if req.OnChunk != nil {
		return r.streamAttempt(ctx, req, next, start)
	}
	if r.attemptTimeout == 0 { // the common case: no context to derive
		resp, err := next.Generate(ctx, req)
		return resp, false, err
	}
	actx, stop := context.WithTimeoutCause(ctx, r.attemptTimeout, ErrAttemptTimeout)
	defer stop()
	resp, err := next.Generate(actx, req)
	return resp, false, r.attemptErr(ctx, actx, err)
}

// attemptContext is ctx bounded by Timeouts.Attempt, when set, and its
// cancel.
func (r *Retrier) attemptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.attemptTimeout == 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, r.attemptTimeout, ErrAttemptTimeout)
}

// attemptErr is err, the error of an attempt run under actx, as an
// ErrAttemptTimeout when Timeouts.Attempt ended the attempt while ctx, the
// caller's, was live.
func (r *Retrier) attemptErr(ctx, actx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), ErrAttemptTimeout) {
		return timeoutError(ErrAttemptTimeout, r.attemptTimeout, err)
	}
	return err
}
