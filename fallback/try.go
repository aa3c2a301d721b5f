package fallback

import (
	"context"
	"errors"
	"time"

	"github.com/portico-llm/portico"
)

// try calls candidate r at position pos. It returns the response, or the error
// and whether the group must stop (return err as is) rather than move on; when
// it moves on, the hop is recorded.
func (g *Group) try(ctx context.Context, c *call, r *portico.Route, pos int) (resp *portico.Response, stop bool, err error) {
	if !c.hasDL {
		return g.attempt(ctx, ctx, c, r)
	}
	remaining := time.Until(c.deadline)
	d, ok := allowance(remaining, c.reserve, g.cfg.MinAttempt, g.cfg.Share, !g.followed(c, pos))
	if !ok {
		g.hop(ctx, c, r, reasonDeadline, nil)
		return nil, true, g.outOfTime(ctx, c)
	}
	if d >= remaining { // no reserve, last candidate: the caller's deadline is its own
		return g.attempt(ctx, ctx, c, r)
	}
	// The cause tells the route (its breaker, its adapter) that the group
	// ended the call for its own share, not the caller: the adapter reports
	// Ambiguous or Transient, which counts against the route's breaker, where
	// the caller's Deadline would not.
	cctx, cancel := context.WithTimeoutCause(ctx, d, ErrShareTimeout)
	defer cancel()
	return g.attempt(ctx, cctx, c, r)
}

// ErrShareTimeout is the cause (context.Cause) of a candidate's context when
// the group ended it because the candidate's share of the deadline ran out
// (see Config.Share). errors.Is(ErrShareTimeout, portico.ErrLayerTimeout)
// holds, so [portico.FromContext] and the provider adapters classify the
// call as the layer's own timeout ([portico.Ambiguous] once the request was
// sent, [portico.Transient] before), a route fault that a breaker counts,
// rather than the caller's [portico.Deadline], which it ignores: a hung
// primary trips its breaker and is then skipped at once.
var ErrShareTimeout error = portico.NewLayerTimeout("fallback: share timeout")

// attempt calls r under cctx, a context derived from the request's ctx with
// r's allowance, and judges the outcome as try describes.
func (g *Group) attempt(ctx, cctx context.Context, c *call, r *portico.Route) (resp *portico.Response, stop bool, err error) {
	req := c.req
	var st *streamed // with OnChunk: what the caller's callback did
	rename := r.ModelName != "" && r.ModelName != req.Model
	if rename || req.OnChunk != nil {
		req = req.Clone()
		if rename {
			req.Model = r.ModelName
		}
		if next := c.req.OnChunk; next != nil {
			st = new(streamed)
			req.OnChunk = func(ch portico.Chunk) error {
				st.delivered = true
				err := next(ch)
				if err != nil {
					st.callerFailed = true
				}
				return err
			}
		}
	}
	var start int64
	if g.stats != nil {
		start = g.clock()
	}
	resp, err = r.Model.Generate(cctx, req)
	if st != nil && st.delivered {
		c.delivered = true
	}
	if err == nil && resp == nil { // breaks the Model contract: no answer to return
		err = portico.ErrNilResponse // shared: the hop names the route
	}
	if g.stats != nil && (st == nil || !st.callerFailed) {
		// An error of the caller's own OnChunk says nothing about the route.
		g.learn(ctx, c.idx, start, err)
	}
	if err == nil {
		return resp, false, nil
	}
	if c.delivered || ctx.Err() != nil {
		if ctx.Err() != nil && !c.delivered && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			g.hop(ctx, c, r, portico.ClassOf(err).String(), err)
			return nil, true, g.outOfTime(ctx, c)
		}
		return nil, true, stopped(c.hops, r, err)
	}
	class := portico.ClassOf(err)
	reason := class.String()
	if cctx.Err() != nil && errors.Is(context.Cause(cctx), ErrShareTimeout) {
		// The candidate's own share ran out, the caller's deadline has not:
		// move on whatever class the route reports (Ambiguous once sent, even
		// with NoAmbiguousRetry: the split exists to reach the fallback after
		// a stalled primary, seed 003).
		g.charge(c, r, class, err)
		g.hop(ctx, c, r, "timeout", err)
		return nil, false, err
	}
	switch class {
	case portico.Transient, portico.RateLimited, portico.Rejected, portico.InvalidResponse:
	case portico.Incompatible:
		if w := r.Capabilities.ContextWindow; w > 0 && overflow(err) {
			reason = "context window"
			// The input needs more than this window: routes no larger are skipped.
			c.learned = max(c.learned, w-c.req.MaxOutputTokens+1)
		}
	case portico.Ambiguous:
		if c.req.NoAmbiguousRetry {
			return nil, true, stopped(c.hops, r, err)
		}
	case portico.Deadline:
		reason = "timeout" // its own share ran out; the caller's deadline has not
	default: // Permanent, Canceled, and anything else
		return nil, true, stopped(c.hops, r, err)
	}
	g.charge(c, r, class, err)
	g.hop(ctx, c, r, reason, err)
	return nil, false, err
}

// charge accounts for the failed call to r the group is leaving: the cost of
// the usage its error says was billed goes to the answer's Cost (c.billed)
// and to the contract's budget (c.spent); without such usage, an
// InvalidResponse or Ambiguous failure, likely billed, counts at its
// estimate against the budget only.
func (g *Group) charge(c *call, r *portico.Route, class portico.Class, err error) {
	if u := portico.UsageOf(err); u != nil {
		cost := r.Capabilities.Cost(*u)
		c.billed += cost
		c.spent += cost
		return
	}
	if class == portico.InvalidResponse || class == portico.Ambiguous {
		c.spent += g.estimate(c, r)
	}
}

// streamed is what the caller's OnChunk did during one streamed attempt.
type streamed struct {
	delivered    bool // a chunk reached the caller
	callerFailed bool // the caller's OnChunk returned an error
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

// followed reports whether a candidate after position pos could serve the
// request now, so the one at pos must leave time for it.
func (g *Group) followed(c *call, pos int) bool {
	n := len(g.cfg.Routes)
	if c.order != nil {
		n = len(c.order)
	}
	for p := pos + 1; p < n; p++ {
		if g.skip(c, g.route(c, p)) == "" {
			return true
		}
	}
	return false
}

// outOfTime is the error of a search stopped because the time ran out: an
// exhausted error of class Deadline when routes were left, else the context's.
func (g *Group) outOfTime(ctx context.Context, c *call) error {
	if err := portico.FromContext(ctx); err != nil && len(c.hops) == 0 {
		return unsent(err)
	}
	err := exhausted(c.hops)
	var pe *portico.Error
	if errors.As(err, &pe) && pe.Class != portico.Ambiguous {
		pe.Class = portico.Deadline
		pe.RetryAfter = 0
	}
	return err
}

// unsent marks err, the context's error for a call in which no route was
// called, as never sent ([portico.Error.NotSent]), so that a rate limiter
// outside the group gives the call's whole reservation back.
func unsent(err error) error {
	if pe, ok := err.(*portico.Error); ok {
		pe.NotSent = true
	}
	return err
}

// learn records the outcome of a call to route idx that started at start on
// the group's clock, for the Candidate fields a Ranker reads. A Deadline
// counts against the route only when it ran out of its own share of the time,
// not when the caller's ctx ended.
func (g *Group) learn(ctx context.Context, idx int, start int64, err error) {
	now := g.clock()
	st := &g.stats[idx]
	if err == nil {
		st.success(time.Duration(now - start))
		return
	}
	if c := portico.ClassOf(err); c.RouteFault() || (c == portico.Deadline && ctx.Err() == nil) {
		st.failure(now)
	}
}
