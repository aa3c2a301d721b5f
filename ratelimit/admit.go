package ratelimit

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/due"
	"github.com/portico-llm/portico/internal/mono"
)

// admit takes a slot of the in-flight cap (queueing for one if configured)
// and then the call's share of both buckets, waiting in Wait mode, at now
// (mono.Now). On success t.e holds the key's entry, with the slot and
// the reservation counted.
func (l *Limiter) admit(ctx context.Context, req *portico.Request, t *ticket, now time.Duration) error {
	e := l.acquire(l.keyOf(req), req, now) // locked
	if err := l.checkTier(e, req, t); err != nil {
		return err
	}
	if l.cfg.Queue.programs() && req.Identity.SessionID != "" {
		t.prog = e.program(req.Identity.SessionID, now, l.seq.Add(1), l.cfg.Queue.ProgramTTL)
	}
	t.e = e
	if lmax := l.slots(e, req.Priority); e.mustQueue(lmax) {
		var err error
		if now, err = l.queueFor(ctx, req, e, t, lmax, now); err != nil {
			return err
		}
	} else {
		e.inflight++
	}
	if t.prog != nil {
		t.start, t.path = now, t.prog.attained
	}
	return l.takeBuckets(ctx, req, e, t, now)
}

// checkTier checks a call priced before its key's limits were known (with
// tiers) against them, before it takes a slot or a place in line; on an
// error it unlocks e. Without tiers the call was priced against them.
func (l *Limiter) checkTier(e *entry, req *portico.Request, t *ticket) error {
	err := t.unpriced
	switch {
	case len(l.limits) == 1 || t.reserve == 0 && err == nil: // no tiers, or nothing to check
		return nil
	case e.lim.Tokens == 0:
		t.reserve = 0 // nothing to charge, nothing to refund
		return nil
	case err == nil:
		if t.fit(e.lim.TokenBurst) {
			return nil
		}
		err = l.overCapacity(req.Model, t.in, t.max, e.lim.TokenBurst)
	}
	e.mu.Unlock()
	return err
}

// takeBuckets takes the call's share of e's buckets, which is locked and
// holds its slot, waiting in line for them in Wait mode; e is unlocked on
// return, and on an error the slot is freed.
func (l *Limiter) takeBuckets(ctx context.Context, req *portico.Request, e *entry, t *ticket, now time.Duration) error {
	var h *hold // our place in line while we wait (Wait mode)
	waitUntil := now + l.cfg.MaxWait
	for {
		ok, wait, which, tooLarge := e.take(now, t.reserve, h, l.lead)
		if tooLarge && t.fit(e.lim.TokenBurst) { // only a learned scale put it over
			if h != nil {
				h.tokens = float64(t.reserve)
			}
			continue
		}
		if ok {
			e.unhold(h)
			t.granted, t.inflight = now, e.inflight // for a Concurrency
			e.mu.Unlock()
			return nil
		}
		if tooLarge || !l.mayWait(ctx, req, wait, waitUntil-now, now) {
			return l.refuse(ctx, req, e, t, h, now, which, wait, tooLarge)
		}
		var err error
		if h, err = l.sleep(ctx, req, e, t, h, now, which, wait); err != nil {
			return err
		}
		now = mono.Now()
	}
}

// mayWait reports whether a call may wait wait for the buckets at now:
// Wait mode, not a hedge, and the wait within left (of MaxWait), the
// context's deadline and the cap on a wait in place.
func (l *Limiter) mayWait(ctx context.Context, req *portico.Request, wait, left, now time.Duration) bool {
	if l.refusesWait(req, wait, left) || pastCap(ctx, wait) {
		return false
	}
	dl, ok := due.Deadline(ctx) // a deadline carried to the group counts
	return !ok || wait <= mono.Of(dl)-now
}

// refusesWait reports whether a call that the buckets admit after wait,
// with left to wait at most, is refused now: in Reject mode, a hedge
// (which takes spare capacity only), or a wait beyond left.
func (l *Limiter) refusesWait(req *portico.Request, wait, left time.Duration) bool {
	return l.cfg.Mode == Reject || req.Hedge || wait > left
}

// refuse ends a call the buckets do not admit: it gives back its place in
// line h and its slot, unlocks e and returns the refusal.
func (l *Limiter) refuse(ctx context.Context, req *portico.Request, e *entry, t *ticket, h *hold, now time.Duration, which string, wait time.Duration, tooLarge bool) error {
	capacity := e.lim.TokenBurst
	e.giveBack(h)
	l.releaseLocked(e, now)
	l.unprogram(t, now)
	e.mu.Unlock()
	if tooLarge {
		return l.overCapacity(req.Model, t.in, t.max, capacity)
	}
	return l.limited(ctx, req, which, wait)
}

// sleep waits up to wait for the buckets in line h (a new place at the
// back when nil), or until the key's waiters must plan again; e is locked
// on entry and, unless ctx ends (the slot and place then given back), on
// return.
func (l *Limiter) sleep(ctx context.Context, req *portico.Request, e *entry, t *ticket, h *hold, now time.Duration, which string, wait time.Duration) (*hold, error) {
	first := h == nil
	replan := e.replanChan()
	if first {
		h = e.addHold(t.reserve)
	}
	e.mu.Unlock()
	if first {
		l.observeWait(ctx, req, t, h, wait, which, now)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-replan: // a refund, a place ahead given back, or new limits
	case <-ctx.Done():
		l.abandon(t, h, now)
		return h, notSent(portico.FromContext(ctx))
	}
	e.mu.Lock()
	return h, nil
}

// addHold makes a place in line at the back for a call of tokens. The caller
// holds e.mu.
func (e *entry) addHold(tokens int) *hold {
	h := &hold{tokens: float64(tokens)}
	x := e.w()
	x.holds = append(x.holds, h)
	return h
}

// observeWait reports a call's wait to ctx's Observer. The call holds a slot
// and its place in line h, and e is unlocked: if the Observer panics, both
// are given back before the panic goes on, or the key would keep them for
// ever.
func (l *Limiter) observeWait(ctx context.Context, req *portico.Request, t *ticket, h *hold, wait time.Duration, which string, now time.Duration) {
	ok := false
	defer func() {
		if !ok {
			l.abandon(t, h, now)
		}
	}()
	portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitWait, Route: req.Model, Delay: wait, Reason: which})
	ok = true
}

// abandon gives back the slot and the place in line h of the call of t,
// waiting since now and not to be admitted; t.e is unlocked.
func (l *Limiter) abandon(t *ticket, h *hold, now time.Duration) {
	e := t.e
	e.mu.Lock()
	e.giveBack(h)
	l.releaseLocked(e, mono.Now())
	l.unprogram(t, now)
	e.mu.Unlock()
}

// queueFor waits in e's queue for a slot below lmax, for the call of t: e
// is locked on entry and, on success, locked again, the slot taken, with
// the time now. It is admit's slow path, apart so that the happy path
// carries none of it. The waiters go first, at their rank now (it rises
// with time, see Queue.rank); a slot still free below lmax is then the
// call's, since every waiter left ranks below it, so neither a hedge nor a
// full queue sheds a call that has a free slot.
func (l *Limiter) queueFor(ctx context.Context, req *portico.Request, e *entry, t *ticket, lmax int, now time.Duration) (time.Duration, error) {
	l.dispatch(e, now)
	if e.inflight < lmax {
		e.inflight++
		return now, nil
	}
	if req.Hedge || e.queued() >= l.cfg.Queue.Size && !e.evict(&l.cfg.Queue, req.Priority, now) {
		return 0, l.shedLocked(ctx, req, e, t, now) // a hedge takes spare capacity only; a full queue sheds the lowest priority
	}
	if testHookQueue != nil {
		testHookQueue()
	}
	w := &waiter{ready: make(chan struct{}), seq: l.seq.Add(1), enq: now, prog: t.prog, prio: req.Priority}
	x := e.w()
	x.queue = append(x.queue, w)
	l.dispatch(e, now)
	e.mu.Unlock()
	return l.awaitSlot(ctx, req, e, t, w, now)
}

// awaitSlot waits, queued as w since now, until a slot is handed to w,
// and returns with e locked and the time then; or it fails, e unlocked,
// when w is shed (by a call of higher priority, or when a routing layer
// with another route for the request caps a wait in place,
// portico.MaxWaitFromContext: the layer then moves on) or ctx ends.
func (l *Limiter) awaitSlot(ctx context.Context, req *portico.Request, e *entry, t *ticket, w *waiter, now time.Duration) (time.Duration, error) {
	ctx, cancel := due.Bound(ctx) // the wait ends at a carried deadline too
	defer cancel()
	var capped <-chan time.Time // nil: no cap
	if d, ok := portico.MaxWaitFromContext(ctx); ok {
		tm := time.NewTimer(d)
		defer tm.Stop()
		capped = tm.C
	}
	select {
	case <-w.ready:
		e.mu.Lock()
	case <-ctx.Done():
		l.leaveQueue(e, w, t, now)
		return 0, notSent(portico.FromContext(ctx))
	case <-capped:
		e.mu.Lock()
		dequeue(e, w) // none to dequeue when handed a slot as the cap passed
	}
	if !w.granted { // shed from the queue, or capped
		return 0, l.shedLocked(ctx, req, e, t, now)
	}
	return mono.Now(), nil
}

// shedLocked sheds the call of t, which holds no slot, undoing its
// program bookkeeping and unlocking e.
func (l *Limiter) shedLocked(ctx context.Context, req *portico.Request, e *entry, t *ticket, now time.Duration) error {
	l.unprogram(t, now)
	e.mu.Unlock()
	return l.shed(ctx, req)
}

// leaveQueue takes the waiter w of the ticket t out of e's queue, or frees
// the slot it was handed meanwhile.
func (l *Limiter) leaveQueue(e *entry, w *waiter, t *ticket, now time.Duration) {
	e.mu.Lock()
	if w.granted {
		l.releaseLocked(e, mono.Now())
	} else {
		dequeue(e, w)
	}
	l.unprogram(t, now)
	e.mu.Unlock()
}

// pastCap reports whether a wait for the buckets is longer than the wait in
// place a routing layer caps it at (portico.MaxWaitFromContext).
func pastCap(ctx context.Context, wait time.Duration) bool {
	d, ok := portico.MaxWaitFromContext(ctx)
	return ok && wait > d
}

// testHookQueue, when set by a test, runs as a call decides to queue, with
// the entry locked: a test makes another call complete there.
var testHookQueue func()

// hold is a waiting call's place in line: the tokens and the request it
// will take. Calls that arrive later, and waiters behind it, leave room for
// it, so a large call is not starved by a stream of small ones; the bucket
// itself is charged only at admission, so its level never goes below zero
// for a wait and the bound's proof is unchanged. A wait that ends without
// admission (canceled, refused) gives its hold back with giveBack, which
// makes the waiters behind it plan again.
type hold struct{ tokens float64 }

// notSent marks err, the *portico.Error of a call the Limiter ends before
// calling next, as never sent (see [portico.Error.NotSent]), so that an outer
// Limiter gives the whole reservation back.
func notSent(err error) error {
	if pe, ok := err.(*portico.Error); ok {
		pe.NotSent = true
	}
	return err
}

// giveBack removes the hold h of a wait that ends without admission and
// wakes the key's waiters to plan their waits again (see replanChan): the
// room they left for h is free, so the next in line may go sooner. An
// admission removes its hold with unhold alone: it takes from the buckets
// what its hold reserved, which leaves every later waiter's wait as it was.
// Nothing to do when h is nil. The caller holds e.mu.
func (e *entry) giveBack(h *hold) {
	if h == nil {
		return
	}
	e.unhold(h)
	e.replan()
}

// replanChan returns the channel that the key's waiters sleep on beside
// their timer, created when the first of them goes to sleep: it is closed
// (see replan) when their waits must be computed again. Only waiting calls
// (Wait mode, a bucket without room) reach it. The caller holds e.mu.
func (e *entry) replanChan() chan struct{} {
	x := e.w()
	if x.wake == nil {
		x.wake = make(chan struct{})
	}
	return x.wake
}

// replan wakes every waiter of the key, each to lock e and compute its
// wait again from the state now: after a refund, a place in line given back,
// or a SetLimit. Each plans behind the holds before its own, so the first in
// line takes what a refund freed and a later arrival never overtakes it. The
// next waiter to sleep makes a new channel. The caller holds e.mu.
func (e *entry) replan() {
	if e.held() > 0 && e.wake != nil { // every waiter holds a place
		close(e.wake)
		e.wake = nil
	}
}

// ahead returns the tokens and requests held by waiters in line before h
// (all of them when h is nil: a new arrival goes to the back).
func (e *entry) ahead(h *hold) (float64, int) {
	tok, n := 0.0, 0
	if e.waits == nil {
		return tok, n
	}
	for _, x := range e.holds {
		if x == h {
			break
		}
		tok += x.tokens
		n++
	}
	return tok, n
}

// unhold removes h, if any, from e's line. The caller holds e.mu.
func (e *entry) unhold(h *hold) {
	if h == nil {
		return
	}
	if i := slices.Index(e.holds, h); i >= 0 {
		e.holds = slices.Delete(e.holds, i, i+1)
	}
}

// take admits cost tokens and one request at now, leaving room for the
// waiters ahead of h, or takes nothing and returns the wait after which it
// would succeed if nothing else happened, and which bucket refused ("tokens"
// or "requests"). Both buckets are checked before either is charged, so a
// refusal changes neither. A lead in [0, 1) admits the call once each
// bucket holds (1-lead) of its cost, charging the whole (a fail-open
// share's, see Limiter.lead). It returns tooLarge when cost exceeds the
// token bucket's capacity, which SetLimit may have lowered since the call
// was priced: the call can never be admitted. The caller holds e.mu.
func (e *entry) take(now time.Duration, cost int, h *hold, lead float64) (ok bool, wait time.Duration, which string, tooLarge bool) {
	aheadTok, aheadReq := e.ahead(h)
	n := float64(cost)
	var tl float64
	var tt time.Duration
	if e.lim.Tokens > 0 {
		if cost > e.lim.TokenBurst { // limits lowered by SetLimit since pricing
			return false, 0, "tokens", true
		}
		tl, tt = e.tok.at(now)
		if need := n*(1-lead) + aheadTok; !e.tok.fits(tl, need, tt) {
			return false, max(e.tok.waitFor(need-tl, tt), e.requestWait(now, aheadReq)), "tokens", false
		}
	}
	if e.lim.Requests > 0 {
		rl, rt := e.req.at(now)
		if need := float64(aheadReq+1) - lead; !e.req.fits(rl, need, rt) {
			return false, e.req.waitFor(need-rl, rt), "requests", false
		}
		e.req.set(rl-1, rt)
	}
	if e.lim.Tokens > 0 {
		e.tok.set(tl-n, tt)
	}
	return true, 0, "", false
}

// requestWait is how long the request bucket makes a call that the token
// bucket refused at now wait, behind aheadReq requests held in line: the
// refill of its shortfall, 0 without one or without a request bucket.
func (e *entry) requestWait(now time.Duration, aheadReq int) time.Duration {
	if e.lim.Requests == 0 {
		return 0
	}
	rl, rt := e.req.at(now)
	if need := float64(aheadReq+1) - rl; need > 0 {
		return e.req.waitFor(need, rt)
	}
	return 0
}

// releaseLocked frees a slot, handing it to the best waiter if any. The
// caller holds e.mu.
func (l *Limiter) releaseLocked(e *entry, now time.Duration) {
	e.inflight--
	l.dispatch(e, now)
}

// dispatch hands free slots to the waiters served first, one by one,
// while the first one's priority (aged) finds a slot (see slots), and then
// arms or stops e's aging timer (see ageLater). The caller holds e.mu.
func (l *Limiter) dispatch(e *entry, now time.Duration) {
	for e.queued() > 0 {
		i := e.next(&l.cfg.Queue, now)
		if lmax := l.slots(e, l.cfg.Queue.rank(e.queue[i], now)); lmax > 0 && e.inflight >= lmax {
			break
		}
		e.handoff(i, now)
		e.inflight++
	}
	if e.waits != nil {
		l.ageLater(e, now)
	}
}

// dequeue takes w, which gave up waiting, out of e's queue (see
// entry.remove), stopping the aging timer when no one is left. The caller
// holds e.mu.
func dequeue(e *entry, w *waiter) {
	e.remove(w)
	if e.queued() == 0 {
		e.stopAging()
	}
}

// ageLater arms e's one aging timer for the next step of a waiter's rank
// (see entry.nextStep) while a slot of the cap is free that no waiter's
// rank reaches yet: a waiter held only by Config.Reserve. A rank rises
// with time alone, with no arrival or release to dispatch, so the timer
// dispatches. Otherwise it stops the timer. The caller holds e.mu.
func (l *Limiter) ageLater(e *entry, now time.Duration) {
	var at time.Duration
	ok := l.cfg.Reserve > 0 && e.inflight < l.maxInFlight(e) // nextStep finds no waiter in an empty queue
	if ok {
		at, ok = e.nextStep(&l.cfg.Queue, now)
	}
	switch {
	case !ok:
		e.stopAging()
	case e.age == nil:
		e.age = time.AfterFunc(at-now, func() {
			e.mu.Lock()
			l.dispatch(e, mono.Now())
			e.mu.Unlock()
		})
	default:
		e.age.Reset(at - now)
	}
}

// stopAging stops e's aging timer, if any. The caller holds e.mu.
func (e *entry) stopAging() {
	if e.age != nil {
		e.age.Stop()
	}
}

// maxInFlight is the cap on e's calls in flight now: the tighter of
// Limits.MaxInFlight and Config.Concurrency's limit (at least 1), 0 for
// none. The caller holds e.mu.
func (l *Limiter) maxInFlight(e *entry) int {
	if l.cfg.Concurrency == nil {
		return e.lim.MaxInFlight
	}
	return tighter(e.lim.MaxInFlight, max(l.cfg.Concurrency.Limit(), 1))
}

// tighter returns the lower of caps a and b > 0, a being 0 for none.
func tighter(a, b int) int {
	if a == 0 {
		return b
	}
	return min(a, b)
}

// unprogram undoes the program bookkeeping of a call that did not run.
func (l *Limiter) unprogram(t *ticket, now time.Duration) {
	if t.prog != nil {
		t.prog.active--
		t.prog.lastSeen = now
	}
}

func (l *Limiter) shed(ctx context.Context, req *portico.Request) error {
	portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitReject, Route: req.Model, Class: portico.Rejected, Reason: "overloaded"})
	l.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "ratelimit: shed", logModel(req.Model))
	return &portico.Error{Class: portico.Rejected, RefusedBy: l.cfg.RefusedBy, Model: req.Model, Reason: "overloaded", NotSent: true, Err: ErrOverloaded}
}

func (l *Limiter) limited(ctx context.Context, req *portico.Request, which string, wait time.Duration) error {
	portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitReject, Route: req.Model, Class: portico.RateLimited, Delay: wait, Reason: which})
	l.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "ratelimit: limited", logModel(req.Model),
		slog.Duration("retry_after", wait), slog.String("bucket", which))
	return &portico.Error{Class: portico.RateLimited, RefusedBy: l.cfg.RefusedBy, Model: req.Model, Reason: "rate limit: " + which, RetryAfter: wait, NotSent: true, Err: ErrLimited}
}
