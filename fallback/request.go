package fallback

import (
	"context"
	"errors"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/cut"
	"github.com/portico-llm/portico/internal/due"
	"github.com/portico-llm/portico/internal/gap"
	"github.com/portico-llm/portico/rank"
)

// request is one request's way through a Group, in the order it happens:
// run orders the candidates and walks them; skip filters one; try bounds it
// by its share of the deadline; attempt calls it; judge decides whether to
// move on, and cool, charge and hop record a route left. The request ends
// with an answer stamped by [portico.Route.Stamp], or with one of the errors
// that exhausted.go builds.
type request struct {
	g         *Group
	req       *portico.Request
	est       int     // estimated input tokens; -1 until first needed
	learned   int     // least input size routes taught (a context overflow), 0 if none
	spent     float64 // estimated cost of failed calls that were likely billed
	billed    float64 // realised cost of failed calls whose error carried Usage
	hops      []portico.Hop
	wrong     error     // Fits' Permanent error, once skip found one
	until     time.Time // earliest a left or skipped route said it takes calls again; zero if none did
	primary   *portico.Route
	delivered bool // a chunk reached the caller
	hasDL     bool
	carried   bool             // the deadline is one ctx carries (package due), not ctx's own
	deadline  time.Time        // ctx's, or the one it carries, when hasDL
	reserve   time.Duration    // kept back before the deadline, when hasDL
	left      time.Duration    // time left at entry, when hasDL; the first share's while fresh
	fresh     bool             // no share or hop since left was read
	order     []rank.Candidate // with a Policy; nil means Routes order
	called    bool             // a candidate was called: the next share may be refused (see share)
	fit       int              // 1 + a route Fits passed on, 0 if none; see skip
	fitIn     int              // the input size Fits passed on it with
	cooled    int              // 1 + the route whose Retry-After the request cooled down last, 0 if none
	cont      *continuation    // with Request.ContinueOnBreak on a stream; else nil
	plan      *plan            // a raced request's (see Group.race); else nil
}

// run tries the candidates in order and returns the first answer, or the
// error of a search that stopped or ran out of routes.
func (r *request) run(ctx context.Context) (*portico.Response, error) {
	r.enter(ctx)
	n, err := r.candidates(ctx)
	if err != nil {
		return nil, err
	}
	if p := r.plan; p != nil { // see Group.race
		return p.r.race(ctx, r.g.cfg.Hedge, n, p)
	}
	for pos := range n {
		if resp, done, err := r.visit(ctx, pos); done {
			return resp, err
		}
	}
	if r.cont != nil {
		if resp, done, err := r.again(ctx, n-1); done {
			return resp, err
		}
	}
	return r.exhausted(ctx)
}

// candidates returns how many candidates the request has: Config.Routes,
// or with a Policy those rank orders (the error: see rank).
func (r *request) candidates(ctx context.Context) (int, error) {
	if r.g.cfg.Policy == nil {
		return len(r.g.cfg.Routes), nil
	}
	var err error
	r.order, err = r.rank(ctx)
	return len(r.order), err
}

// enter reads the request's deadline (the earlier of ctx's and the one it
// carries, package due), and the clock once for the entry and the first
// share, fixes the reserve kept back before the deadline, and reports a
// shared cooldown store that fails open.
func (r *request) enter(ctx context.Context) {
	g := r.g
	r.deadline, r.hasDL = ctx.Deadline()
	if at, ok := due.Of(ctx); ok {
		r.deadline, r.hasDL, r.carried = at, true, true
	}
	if r.hasDL { // the reserve is fixed at entry: the point kept back is deadline - reserve
		r.left, r.fresh = time.Until(r.deadline), true
		r.reserve = g.reserve(r.left)
	}
	if g.shared != nil && g.shared.Degraded() {
		portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Class: portico.Transient, Reason: "fallback:fail_open"})
	}
}

// visit skips or tries the candidate at position pos, and reports whether
// the search ends there, with the answer or the error.
func (r *request) visit(ctx context.Context, pos int) (*portico.Response, bool, error) {
	rt, idx, reason := r.look(pos)
	if reason == reasonCooldown && r.waitOut(ctx, pos, idx) {
		reason = r.skip(rt, idx) // its quota's cooldown is over
	}
	return r.tryOrSkip(ctx, rt, idx, pos, reason)
}

// tryOrSkip tries rt, route idx at position pos, when reason (see skip) is
// "", else records the skip; it reports whether the search ends there.
func (r *request) tryOrSkip(ctx context.Context, rt *portico.Route, idx, pos int, reason string) (*portico.Response, bool, error) {
	switch reason {
	case "":
		resp, stop, err := r.try(ctx, rt, idx, pos)
		if err == nil {
			return r.answer(rt, resp), true, nil
		}
		return nil, stop, err
	case reasonWrong:
		return nil, true, r.wrong // wrong on any route: nothing is called
	}
	r.skipped(ctx, rt, idx, reason)
	return nil, false, nil
}

// waitOut waits out route idx's cooldown, at position pos, and reports
// whether it did, when the routes left share the quota a route of this
// request just cooled down (see quotaWait): the group then waits as that
// route alone would have waited in place. False when ctx ends first.
func (r *request) waitOut(ctx context.Context, pos, idx int) bool {
	w := r.quotaWait(pos, idx)
	if w <= 0 {
		return false // the request fails with the hint, as one route's would
	}
	t := time.NewTimer(w)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// quotaWait is the wait waitOut waits: under a deadline, when this request
// cooled route idx's key down and no candidate after pos could serve now,
// if the wait leaves the reserve and MinAttempt; else 0.
func (r *request) quotaWait(pos, idx int) time.Duration {
	if !r.hasDL || !r.cooledQuota(idx) || r.followed(pos) {
		return 0
	}
	w := r.cooling(idx)
	if time.Until(r.deadline)-w-r.reserve < r.g.cfg.MinAttempt {
		return 0
	}
	return w
}

// cooledQuota reports whether route idx shares the quota (its cooldown
// key) of the route this request cooled down last.
func (r *request) cooledQuota(idx int) bool {
	return r.cooled > 0 && r.g.keys[r.cooled-1] == r.g.keys[idx]
}

// exhausted is the error of a request that left every candidate.
func (r *request) exhausted(ctx context.Context) (*portico.Response, error) {
	if err := due.Err(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, r.outOfTime(ctx)
		}
		if noneSent(r.hops) {
			return nil, unsent(portico.FromContext(ctx))
		}
		return nil, portico.FromContext(ctx)
	}
	return nil, exhausted(r.hops, until(r.until))
}

// until is the time left before t, 0 when t is zero (read no clock then)
// or has passed.
func until(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return max(time.Until(t), 0)
}

// takesCallsIn records that a route takes calls again in d from now.
func (r *request) takesCallsIn(d time.Duration) {
	if d <= 0 {
		return
	}
	if t := time.Now().Add(d); r.until.IsZero() || t.Before(r.until) {
		r.until = t
	}
}

// rank builds the candidates that pass the filter now, with what the group
// learnt about each, in Config.Policy's order. Routes filtered out are
// recorded as hops. The error is that of a request wrong on any route.
func (r *request) rank(ctx context.Context) ([]rank.Candidate, error) {
	routes := r.g.cfg.Routes
	cands := make([]rank.Candidate, 0, len(routes)) // non-nil, even when empty
	for i := range routes {
		rt := &routes[i]
		if reason := r.skip(rt, i); reason == reasonWrong {
			return nil, r.wrong
		} else if reason != "" {
			r.skipped(ctx, rt, i, reason)
			continue
		}
		cands = append(cands, r.rankCandidate(rt, i))
	}
	return rank.Order(cands, r.g.cfg.Policy), nil
}

// rankCandidate is rt, route i, as the Policy ranks it: its estimated
// cost, its weight, what its Headroom says is spent, and what the group
// learnt about it.
func (r *request) rankCandidate(rt *portico.Route, i int) rank.Candidate {
	cd := rank.Candidate{Index: i, Route: rt, EstimatedCost: r.estimate(rt)}
	if w := r.g.cfg.Weights; w != nil {
		cd.Weight = w[i]
	}
	if h := r.g.cfg.Headroom; h != nil {
		if x := h(i, r.req); x < 1 { // NaN: nothing known, Spent 0
			cd.Spent = 1 - max(x, 0)
		}
	}
	r.g.stats.Fill(&cd)
	return cd
}

// look returns the candidate at position pos (see candidate) and why it is
// skipped, or "" (see skip); the first is the primary.
func (r *request) look(pos int) (*portico.Route, int, string) {
	rt, idx := r.candidate(pos)
	if pos == 0 {
		r.primary = rt
	}
	return rt, idx, r.skip(rt, idx)
}

// candidate returns the route at position pos of the request's order and its
// index in Config.Routes.
func (r *request) candidate(pos int) (*portico.Route, int) {
	if r.order != nil {
		return r.order[pos].Route, r.order[pos].Index
	}
	return &r.g.cfg.Routes[pos], pos
}

// skip returns why rt, route idx of Config.Routes, is not a candidate now,
// or "".
func (r *request) skip(rt *portico.Route, idx int) string {
	if reason := r.misfit(rt, idx); reason != "" {
		return reason
	}
	switch {
	case r.cooling(idx) > 0:
		return reasonCooldown
	case !rt.Available():
		return reasonUnavailable
	case r.overBudget(rt):
		return reasonBudget
	case r.withPrimary(rt):
		return reasonIndependent
	}
	return ""
}

// withPrimary reports whether rt may fail with the primary, by
// Config.Independence.
func (r *request) withPrimary(rt *portico.Route) bool {
	return r.primary != nil && r.primary != rt && !independent(r.g.cfg.Independence, &r.primary.Capabilities, &rt.Capabilities)
}

// overBudget reports whether a call to rt, at its estimate, would take the
// spending past the Contract's MaxCost once something was spent.
func (r *request) overBudget(rt *portico.Route) bool {
	return r.maxCost() > 0 && r.spent > 0 && r.spent+r.estimate(rt) > r.maxCost()
}

// misfit returns why the request does not fit rt, route idx, or "";
// reasonWrong, the error kept in r.wrong, when it is wrong on any route.
func (r *request) misfit(rt *portico.Route, idx int) string {
	in := r.inputFor(rt)
	if r.covered(idx, in) {
		return ""
	}
	if err := rt.Capabilities.Fits(r.req, in); err != nil {
		return r.refused(err)
	}
	if r.maxCost() == 0 {
		r.fit, r.fitIn = idx+1, in // what idx's Capabilities cover fits too
	}
	return ""
}

// inputFor is the input size Fits checks rt with: the estimate (input)
// when rt declares a ContextWindow or the Contract a MaxCost, the only
// checks that use it; else what routes taught.
func (r *request) inputFor(rt *portico.Route) int {
	if rt.Capabilities.ContextWindow > 0 || r.maxCost() > 0 {
		return r.input()
	}
	return r.learned
}

// refused returns the reason of err, a refusal of Fits.
func (r *request) refused(err error) string {
	var pe *portico.Error
	switch {
	case !errors.As(err, &pe):
		return "incompatible"
	case pe.Class == portico.Permanent:
		r.wrong = err
		return reasonWrong
	}
	return pe.Reason
}

// maxCost is the request's Contract.MaxCost, 0 without one.
func (r *request) maxCost() float64 {
	if k := r.req.Contract; k != nil {
		return k.MaxCost
	}
	return 0
}

// covered reports whether Fits passed, at input size in and under a
// contract without MaxCost, on a route whose Capabilities route idx's cover.
func (r *request) covered(idx, in int) bool {
	return r.fit > 0 && in == r.fitIn && r.g.covers != nil && r.g.covers[r.fit-1]>>idx&1 != 0
}

// cooling returns how long route idx's cooldown lasts, 0 when it has none.
// It reads the clock only when the store holds a cooldown for it.
func (r *request) cooling(idx int) time.Duration { return until(r.g.cool.Until(r.g.keys[idx])) }

// skipped records that rt, route idx, was skipped for reason and, when it
// is unavailable or cooling down, when it takes calls again: the least such
// time counts toward the RetryAfter of a request that runs out of routes.
func (r *request) skipped(ctx context.Context, rt *portico.Route, idx int, reason string) {
	if reason == reasonCooldown || reason == reasonUnavailable {
		w := r.cooling(idx)
		if !rt.Available() {
			w = max(w, rt.RetryAfter())
		}
		r.takesCallsIn(w)
	}
	r.hop(ctx, rt, reason, nil)
}

// input returns the request's estimated input tokens, raised to what routes
// taught. The estimator runs once per request, when first needed.
func (r *request) input() int {
	if r.est < 0 {
		r.est = r.g.cfg.Estimator.EstimateInputTokens(r.req)
	}
	return max(r.est, r.learned)
}

// estimate is rt's price for the request before the call, as Fits computes it.
func (r *request) estimate(rt *portico.Route) float64 {
	return rt.Capabilities.EstimateCost(r.req, r.input())
}

// followed reports whether a candidate after position pos could serve the
// request now, so the one at pos must leave time for it.
func (r *request) followed(pos int) bool {
	n := len(r.g.cfg.Routes)
	if r.order != nil {
		n = len(r.order)
	}
	for p := pos + 1; p < n; p++ {
		if rt, idx := r.candidate(p); r.skip(rt, idx) == "" {
			return true
		}
	}
	return false
}

// share returns the context the candidate at position pos is called under:
// bounded by its share of the deadline (end releases it; nil when the
// caller's deadline is its own), carrying its cooldown and, when another
// candidate follows, the wait-in-place cap; false when its allowance is
// below MinAttempt. With lift (a stream) and a follower, the share bounds
// the gaps between signs of progress (gap) instead of the whole call.
func (r *request) share(ctx context.Context, pos int, lift bool) (cctx context.Context, end context.CancelFunc, gap time.Duration, ok bool) {
	_, idx := r.candidate(pos)
	vs := &r.g.values[idx]
	if !r.hasDL { // no share and no cap: the route's cooldown alone
		return &valued{ctx, vs[0]}, nil, 0, true
	}
	remaining := r.remaining()
	last := !r.followed(pos)
	d, fits := r.allow(remaining, last)
	if !fits {
		return nil, nil, 0, false
	}
	r.called = true
	until, whole, capped := d, last, 1
	if last {
		capped = 0
	}
	if usable := remaining - r.reserve; lift && !last && d < usable {
		gap, until, whole = d, usable, true // the end is all the caller gave, as the last's
	}
	cctx = &valued{ctx, vs[capped]}
	if until >= remaining { // no reserve, last candidate: the caller's deadline is its own
		if r.carried { // the one context of the request (package due)
			cctx, end = context.WithDeadline(cctx, r.deadline)
		}
		return cctx, end, gap, true
	}
	// Its end from remaining's reading of the clock: no second reading.
	cctx, end = context.WithDeadlineCause(cctx, r.deadline.Add(until-remaining), shareCauses[cut.Of(until, r.g.cfg.FaultAfter, whole)])
	return cctx, end, gap, true
}

// remaining is the time left before the deadline: the entry's reading of
// the clock for the first share, before any hop; a new one after.
func (r *request) remaining() time.Duration {
	fresh := r.fresh && len(r.hops) == 0
	r.fresh = false
	if fresh {
		return r.left
	}
	return time.Until(r.deadline)
}

// allow returns a candidate's allowance when remaining is left, and whether
// it may be called: the first call takes what the deadline leaves even
// below MinAttempt, as it would with no route to fall back on.
func (r *request) allow(remaining time.Duration, last bool) (time.Duration, bool) {
	cfg := &r.g.cfg
	d, fits := allowance(remaining, r.reserve, cfg.MinAttempt, cfg.Share, last)
	if !fits && !r.called && remaining > 0 {
		return remaining, true
	}
	return d, fits
}

// try calls candidate rt, route idx at position pos, within its share, and
// returns the answer, or the error and whether the group stops there.
func (r *request) try(ctx context.Context, rt *portico.Route, idx, pos int) (resp *portico.Response, stop bool, err error) {
	cctx, end, gap, ok := r.share(ctx, pos, r.req.OnChunk != nil)
	if !ok {
		return nil, true, r.noTime(ctx, rt)
	}
	if end != nil {
		defer end()
	}
	return r.attempt(ctx, cctx, rt, idx, gap)
}

// ErrShareTimeout is the cause (context.Cause) of a candidate's context when
// the group ended it because the candidate's share of the deadline ran out,
// or a stream fell silent as long (see Config.Share). It matches [portico.ErrLayerTimeout], so the route
// reports the call as the layer's own timeout ([portico.Ambiguous] once
// sent, [portico.Transient] before), a fault its breaker counts, rather than
// the caller's [portico.Deadline], which it ignores; after an allowance
// shorter than Config.FaultAfter the cause also matches
// [portico.ErrDeadlineCut], which breakers ignore, and, when another
// candidate followed, [portico.ErrUnanswered], which they count in their
// run of consecutive failures only.
var ErrShareTimeout error = portico.NewLayerTimeout("fallback: share timeout")

// shareCauses are ErrShareTimeout in the form of each cut (cut.Causes),
// indexed by cut.Of; ErrShareTimeout's doc says how breakers count each.
var shareCauses = cut.Causes(ErrShareTimeout)

// attempt calls rt under cctx, its share of ctx, and judges the outcome;
// gap > 0 bounds a stream's gaps between signs of progress (see share).
func (r *request) attempt(ctx, cctx context.Context, rt *portico.Route, idx int, gap time.Duration) (*portico.Response, bool, error) {
	var w *watch // with OnChunk: what reached the caller
	var req *portico.Request
	if r.req.OnChunk == nil {
		req = rt.RequestFor(r.req)
	} else {
		w = new(watch)
		cctx, req = r.watched(ctx, cctx, w, rt, gap)
		if w.cut != nil {
			defer w.disarm()
		}
	}
	var start time.Time
	if r.g.stats != nil {
		start = r.timed(idx, w)
	}
	resp, err := rt.Model.Generate(cctx, req)
	resp, err = r.outcome(w, req, resp, err)
	if r.g.stats != nil {
		r.learnCall(ctx, idx, err, w, time.Since(start))
	}
	if err == nil {
		return resp, false, nil
	}
	return r.judge(ctx, cctx, rt, idx, err)
}

// watched returns the context and request of a streamed attempt to rt,
// watched by w, which gates the chunks when it times the first, bounds
// gaps, or keeps the text of a stream that may continue.
func (r *request) watched(ctx, cctx context.Context, w *watch, rt *portico.Route, gap time.Duration) (context.Context, *portico.Request) {
	req := r.req
	var gate portico.ChunkGate
	if r.g.stats != nil {
		gate, w.timed = w, true
	}
	if gap > 0 {
		cctx, gate = w.arm(cctx, gap, shareCauses[cut.Of(gap, r.g.cfg.FaultAfter, false)]), w
	}
	if r.cont != nil {
		gate, req = w, r.begin(ctx, w, rt)
	}
	req = w.Watch(req, gate)
	if rt.ModelName != "" {
		req.Model = rt.ModelName
	}
	return cctx, req
}

// timed starts the statistics' clock for a call to route idx, watched by
// w (nil: not streamed), and returns its start.
func (r *request) timed(idx int, w *watch) time.Time {
	start := time.Now()
	r.g.stats.Start(idx)
	if w != nil {
		w.start = start
	}
	return start
}

// outcome returns what the group makes of a call's resp and err, with w
// its watch (nil: not streamed): a call the gap bound cut is never a
// success; a broken stream may continue (see end).
func (r *request) outcome(w *watch, req *portico.Request, resp *portico.Response, err error) (*portico.Response, error) {
	if w != nil {
		if w.settle() && err == nil { // answered past the cut, which refused the chunks after it
			resp, err = nil, w.cutErr()
		}
		if w.Delivered() {
			r.delivered = true
		}
	}
	if r.cont != nil {
		resp, err = r.end(w, req, resp, err)
	}
	return portico.Answer(resp, err) // shared error: the hop names the route
}

// learnCall tells the statistics how a call to route idx, watched by w
// (nil: not streamed), ended after took.
func (r *request) learnCall(ctx context.Context, idx int, err error, w *watch, took time.Duration) {
	if w == nil {
		r.learn(ctx, idx, err, false, took, 0)
		return
	}
	r.learn(ctx, idx, err, w.CallerFailed(), took, w.ttft)
}

// learn tells the group's statistics how a call to route idx ended; they
// read portico.FaultOf, but only the group knows two things: the caller's
// OnChunk failed, and a Deadline came while the caller's deadline held.
func (r *request) learn(ctx context.Context, idx int, err error, callerFailed bool, took, ttft time.Duration) {
	switch {
	case callerFailed:
		err = context.Canceled // the caller's own OnChunk: nothing about the route
	case portico.ClassOf(err) == portico.Deadline && due.Err(ctx) == nil:
		err = errOwnDeadline // the route ran out of its own share
	}
	r.g.stats.Done(idx, err, took, ttft)
}

// errOwnDeadline is what the group's statistics learn from a route that
// returned Deadline while the caller's deadline held: a fault of the route.
var errOwnDeadline error = &portico.Error{Class: portico.Transient, Reason: "own deadline"}

// watch is a streamed attempt's [portico.StreamWatch]; as its gate it also
// notes the time to the first chunk for a Policy's statistics (timed),
// bounds the gaps between signs of progress (armed: cut is set), and keeps
// the text of a request that may continue a broken stream (c).
type watch struct {
	portico.StreamWatch
	start         time.Time
	ttft          time.Duration
	timed         bool
	c             *continuation
	seam          *portico.Seam // when the attempt continues an answer
	chunks, bytes int           // delivered in this attempt
	// With a gap bound (see arm): the attempt's context it cancels, nil
	// without, and the bound.
	cut    context.Context
	cancel context.CancelCauseFunc
	bound  gap.Bound
}

// GateChunk passes a chunk, or refuses it once the gap bound cut the call
// (no chunk reaches the caller after the cut). It notes the first chunk's
// time (timed) and each chunk as progress for the gap bound (armed), which
// it delivers itself, so that the caller's time in OnChunk (a slow client)
// is not the route's gap; it ungates the watch after the first chunk when
// it needs no more (neither armed nor keeping the text of a request that
// may continue, c).
func (w *watch) GateChunk(c portico.Chunk, delivered bool) (bool, error) {
	if w.cut != nil {
		if _, err := w.bound.Sign(true); err != nil {
			return false, w.cutErr()
		}
	}
	if !delivered {
		w.first()
	}
	pass, err := true, error(nil)
	if w.c != nil {
		pass, err = w.keep(c)
	}
	if w.cut != nil {
		return false, w.deliver(c, pass, err)
	}
	return pass, err
}

// deliver delivers c itself when it passes, then notes progress, so that
// the caller's time in OnChunk is not the route's gap.
func (w *watch) deliver(c portico.Chunk, pass bool, err error) error {
	if pass && err == nil {
		err = w.Deliver(c)
	}
	w.bound.Release()
	return err
}

// first notes the first chunk's time (timed), and ungates the watch when
// it needs no more chunks.
func (w *watch) first() {
	if w.timed {
		w.ttft = max(time.Since(w.start), 1)
	}
	if w.c == nil && w.cut == nil {
		w.Ungate()
	}
}

// arm bounds the attempt's gaps between signs of progress (a chunk, a
// [portico.Progress] report) by d, the first one's too: it returns the
// context to call the route under, which the bound cancels with cause
// once d passed without progress. disarm releases it.
func (w *watch) arm(ctx context.Context, d time.Duration, cause error) context.Context {
	w.cut, w.cancel = context.WithCancelCause(ctx)
	w.bound.Start(w.cancel, gap.Limits{First: d, Gap: d, FirstCause: cause, GapCause: cause}) // Late nil: a chunk after the return passes
	return portico.ContextWithProgress(w.cut, w.progress)
}

func (w *watch) disarm() {
	w.bound.Settle()
	w.cancel(nil)
}

// progress is the function installed with portico.ContextWithProgress.
func (w *watch) progress(portico.Chunk) { w.bound.Sign(false) }

// settle ends the bound when the call returned, and reports whether it
// had cut the call first (false without a bound).
func (w *watch) settle() bool { return w.cut != nil && w.bound.Settle() != nil }

// cutErr is the error of a call the gap bound cut: the group's timeout,
// with its cause, as an adapter reports it.
func (w *watch) cutErr() error { return portico.FromContext(w.cut) }

// judge decides whether the request stops (true) or moves on after rt,
// route idx, failed with err under cctx; err's Retry-After cools rt down.
func (r *request) judge(ctx, cctx context.Context, rt *portico.Route, idx int, err error) (*portico.Response, bool, error) {
	r.cool(idx, err)
	if r.mustStop(ctx) {
		return nil, true, r.stopAfter(ctx, rt, err)
	}
	// The candidate's own share ran out, not the caller's deadline: move
	// on whatever the class (Ambiguous too, even with NoAmbiguousRetry).
	reason := "timeout"
	if !errors.Is(context.Cause(cctx), ErrShareTimeout) {
		var stop bool
		if reason, stop = r.leave(rt, err); stop {
			return nil, true, stopped(r.hops, rt, err, "")
		}
	}
	r.charge(rt, err)
	r.hop(ctx, rt, reason, err)
	return nil, false, err
}

// mustStop reports whether the request stops after a failure whatever it
// was: a chunk reached the caller and the request may not continue, or the
// caller's context ended.
func (r *request) mustStop(ctx context.Context) bool {
	return r.delivered && !r.continues() || due.Err(ctx) != nil
}

// stopAfter is the error of a search stopped after rt failed with err, a
// chunk having reached the caller or the caller's context having ended.
func (r *request) stopAfter(ctx context.Context, rt *portico.Route, err error) error {
	ended := due.Err(ctx)
	switch {
	case ended != nil && !r.delivered && errors.Is(ended, context.DeadlineExceeded):
		r.hop(ctx, rt, portico.ClassOf(err).String(), err)
		return r.outOfTime(ctx)
	case r.delivered && ended == nil:
		return stopped(r.hops, rt, err, reasonDelivered)
	}
	return stopped(r.hops, rt, err, "")
}

// leave returns the reason to leave rt after its failure err, by class,
// and stop when the group must not move on.
func (r *request) leave(rt *portico.Route, err error) (reason string, stop bool) {
	class := portico.ClassOf(err)
	switch class {
	case portico.Transient, portico.RateLimited, portico.Rejected, portico.InvalidResponse:
		return class.String(), false
	case portico.Unusable: // this route cannot serve now; another may
		return class.String(), r.g.cfg.StopOnUnusable
	case portico.Incompatible:
		return r.incompatible(rt, err), false
	case portico.Ambiguous:
		return class.String(), r.req.NoAmbiguousRetry && !r.broke()
	case portico.Deadline:
		return "timeout", false // its own share ran out; the caller's deadline has not
	}
	return class.String(), true
}

// incompatible returns the reason to leave rt after err, an Incompatible
// one; after a context overflow, routes no larger are skipped from then on.
func (r *request) incompatible(rt *portico.Route, err error) string {
	w := rt.Capabilities.ContextWindow
	if w <= 0 || !overflow(err) {
		return portico.Incompatible.String()
	}
	r.learned = max(r.learned, w-r.req.MaxOutputTokens+1)
	return "context window"
}

// cool starts route idx's cooldown when err, its failure, carries a
// Retry-After the route announced (see announced). Every route of the same
// Quota shares it.
func (r *request) cool(idx int, err error) {
	d := announced(err)
	if d <= 0 {
		return
	}
	r.g.cool.Set(r.g.keys[idx], time.Now().Add(min(d, r.g.cfg.MaxCooldown)))
	r.cooled = idx + 1
}

// announced returns the Retry-After the route announced in err: that of the
// first *portico.Error in err's tree, depth first, that is a sent route
// fault; 0 otherwise. A refusal after a sent call ([portico.AfterSent])
// carries its layer's wait, maybe one tenant's: the calls it wraps are read.
func announced(err error) time.Duration {
	if pe, ok := err.(*portico.Error); ok && (pe.RefusedBy == portico.NotRefused || pe.NotSent) {
		return sentWait(pe)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return announced(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, c := range u.Unwrap() {
			if d := announced(c); d > 0 {
				return d
			}
		}
	}
	return 0
}

// sentWait is pe's Retry-After when pe is a route fault that was sent, else 0.
func sentWait(pe *portico.Error) time.Duration {
	if pe.NotSent || !pe.Class.RouteFault() {
		return 0
	}
	return max(pe.RetryAfter, 0)
}

// callsIn is when the route that failed with err takes calls again, by
// err's Retry-After: bounded by MaxCooldown when it cools the route (see
// cool), for then the route is called again after MaxCooldown.
func (r *request) callsIn(err error) time.Duration {
	if d := announced(err); d > 0 {
		return min(d, r.g.cfg.MaxCooldown)
	}
	return portico.RetryAfterOf(err)
}

// overflow reports whether err says the input was too long for the route's
// context window: Code "context_length_exceeded" (OpenAI's) or Reason
// "context window" (the Reason of [portico.Capabilities.Fits]).
func overflow(err error) bool {
	var pe *portico.Error
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == "context_length_exceeded" || pe.Reason == "context window"
}

// charge accounts for the failed call to rt the group is leaving: billed
// usage to the answer's Cost and the budget; without it, a likely billed
// failure at its estimate to the budget only.
func (r *request) charge(rt *portico.Route, err error) {
	if r.broke() {
		r.chargeBreak(rt)
		return
	}
	if u := portico.UsageOf(err); u != nil {
		r.bill(rt.Capabilities.Cost(*u))
		return
	}
	if likelyBilled(err) {
		r.spent += r.estimate(rt)
	}
}

// likelyBilled reports whether a failure err that carries no usage was
// likely billed: an InvalidResponse or Ambiguous call that may have been
// sent (one a layer ended before sending it, NotSent, was not).
func likelyBilled(err error) bool {
	c := portico.ClassOf(err)
	return (c == portico.InvalidResponse || c == portico.Ambiguous) && !portico.NothingSent(err)
}

// bill adds cost, billed by a route the request left, to the answer's Cost
// and to what the request spent.
func (r *request) bill(cost float64) {
	r.billed += cost
	r.spent += cost
}

// hop records that the request left rt for reason, with err (nil when skipped).
func (r *request) hop(ctx context.Context, rt *portico.Route, reason string, err error) {
	h := portico.Hop{Route: rt.Name, Reason: reason, Err: err}
	if err != nil {
		r.takesCallsIn(r.callsIn(err))
		if r.cont != nil {
			h.Chunks, h.Bytes = r.cont.chunks, r.cont.bytes
		}
	}
	r.hops = append(r.hops, h)
	portico.Observe(ctx, portico.Event{Kind: portico.EventFallback, Route: rt.Name, Class: hopClass(h), Reason: reason})
	if l := r.g.cfg.Logger; l != nil {
		l.InfoContext(ctx, "fallback left route", "route", rt.Name, "reason", reason, "class", hopClass(h).String())
	}
}

// noTime records rt as left with too little time to start it, and returns
// the error of the search it stops (outOfTime).
func (r *request) noTime(ctx context.Context, rt *portico.Route) error {
	r.hop(ctx, rt, reasonDeadline, nil)
	return r.outOfTime(ctx)
}

// outOfTime is the error of a search stopped because the time ran out: an
// exhausted error of class Deadline when routes were left, else the context's.
func (r *request) outOfTime(ctx context.Context) error {
	if err := r.ended(ctx); err != nil && len(r.hops) == 0 {
		return unsent(err)
	}
	pe := exhausted(r.hops, 0)
	if pe.Class != portico.Ambiguous {
		pe.Class = portico.Deadline
		pe.RetryAfter, pe.RefusedBy = 0, portico.NotRefused
	}
	return pe
}

// ended is [portico.FromContext] of ctx, or of a context ended by the
// deadline ctx carries once it passed (package due). The group's stop
// rules read due.Err where they would read ctx.Err.
func (r *request) ended(ctx context.Context) error {
	if err := portico.FromContext(ctx); err != nil || due.Err(ctx) == nil {
		return err
	}
	return &portico.Error{Class: portico.Deadline, Err: context.DeadlineExceeded}
}

// unsent marks err, a *portico.Error the group made, as a call that sent
// nothing, so that a limiter outside the group refunds all it reserved.
func unsent(err error) error {
	if pe, ok := err.(*portico.Error); ok {
		pe.NotSent = true
	}
	return err
}
