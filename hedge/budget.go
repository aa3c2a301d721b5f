package hedge

import "github.com/portico-llm/portico"

// Budget is the retry budget hedges are charged to: package retry's
// Retrier implements it, so that hedges and retries to a destination share
// one bound. It must be safe for concurrent use.
type Budget interface {
	// Take takes one retry token for a hedge to destination on behalf of
	// clientKey, as a retry would, or reports false, taking nothing, when
	// the budget has none.
	Take(destination, clientKey string) bool
}

// Refunder is a [Budget] that can give a token back: a hedge refused before
// anything was sent ([portico.NothingSent]: a limiter's Rejected, a NotSent
// error) returns the token it took. package retry's Retrier implements it.
type Refunder interface {
	Refund(destination, clientKey string)
}

// charge is the charge function a Plan gets for a hedge: it takes the
// hedge's token from the Hedger's budget, or reports an empty budget.
func (r *race) charge(dest string) bool {
	b := r.h.budget
	if b == nil || b.Take(dest, r.req.Identity.ClientKey) {
		return true
	}
	portico.Observe(r.ctx, portico.Event{Kind: portico.EventHedge, Route: dest, Reason: "budget"})
	return false
}

// refund gives a hedge's token back to the Hedger's budget when err says
// nothing was sent ([portico.NothingSent]: shed by a limiter, refused by a
// breaker, not after a call that was) and the budget is a [Refunder].
func (r *race) refund(dest string, err error) {
	if rf, ok := r.h.budget.(Refunder); ok && portico.NothingSent(err) {
		rf.Refund(dest, r.req.Identity.ClientKey)
	}
}
