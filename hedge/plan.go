package hedge

import (
	"context"
	"time"

	"github.com/portico-llm/portico"
)

// Attempt is one attempt of a race, as a [Plan] prepares it.
type Attempt struct {
	// Model answers the attempt; Request is what it is sent (its OnChunk,
	// when streaming, is wrapped by the race).
	Model   portico.Model
	Request *portico.Request
	// Context, when non-nil, is the context to call Model under, derived
	// from the race's (a share of a deadline, say); nil means the race's.
	// The race calls Model under a cancelable context derived from it.
	Context context.Context
	// Destination names the attempt's destination in events.
	Destination string
	// Latency, when non-nil, is the destination's sketch: when the Hedger
	// waits a Config.Percentile, an attempt started first or after a failure
	// (not a hedge) adds its latency (time to the first chunk when
	// streaming) to it, and the delay before the hedge that follows it is
	// that percentile of it.
	Latency *Latency
}

// Result is how an attempt ended, as the race reports it to its [Plan].
type Result struct {
	// Response and Err are what the attempt's Model returned (a Response
	// without error becomes [portico.ErrNilResponse]'s failure).
	Response *portico.Response
	Err      error
	// Delivered: a chunk of the attempt reached the caller; CallerFailed:
	// the caller's OnChunk failed during it.
	Delivered, CallerFailed bool
	// Lost: the race canceled the attempt because another one won.
	// Unsent: it did so before the attempt's Model was called (another
	// answered, or its chunk reached the caller, while the Plan prepared
	// it); Err is then Canceled and NotSent.
	Lost, Unsent bool
	// Elapsed is the attempt's duration; TTFT the time to its first chunk
	// that reached the caller, 0 if none did.
	Elapsed, TTFT time.Duration
}

// Plan is what a race runs: the attempts it may start, and what their ends
// mean. [Hedger.Wrap] runs one over a single Model; package fallback runs
// one over its candidates. The race calls both methods one at a time,
// never concurrently: from the goroutine that called [Hedger.Run] until a
// hedge falls due, then from the goroutine that runs the race from there
// on; ctx is the context the race was run under, and a the attempt as
// Next prepared it, so that a Plan need keep neither.
type Plan interface {
	// Next prepares attempt i (0 first) in *a, which is zero. For a hedge,
	// charge is non-nil: Next must call it with the attempt's destination
	// before committing to the attempt and, when it reports false (the
	// budget is empty), return ok false having changed nothing. For the
	// first attempt and one that follows a failure, charge is nil. ok false
	// also means no attempt is left; a non-nil stop ends the race with that
	// error.
	Next(ctx context.Context, i int, charge func(destination string) bool, a *Attempt) (ok bool, stop error)
	// Ended reports the end of attempt i, prepared in *a, as *res says
	// (both valid during the call only). A non-nil stop ends the race with
	// that error, the other attempts canceled; it is ignored for an attempt
	// that Lost and for the winner (Err nil, or Delivered).
	Ended(ctx context.Context, i int, a *Attempt, res *Result) (stop error)
}

// single is the Plan of a Wrap: every attempt goes to next.
type single struct {
	m    *model
	req  *portico.Request
	dest string
}

// Next prepares a hedge while fewer than MaxInFlight were made and, with a
// Config.Cost, the attempts sent would stay within the request's MaxCost,
// sending it as [AsHedge] marks it; after a failure it has nothing to add
// (retrying is the retry layer's).
func (p *single) Next(ctx context.Context, i int, charge func(string) bool, a *Attempt) (bool, error) {
	req := p.req
	if i > 0 {
		h := p.m.h
		if charge == nil || i >= h.maxInFlight || h.overCost(ctx, req, i+1, p.dest) || !charge(p.dest) {
			return false, nil
		}
		req = AsHedge(req)
	}
	*a = Attempt{Model: p.m.next, Request: req, Destination: p.dest, Latency: &p.m.latency}
	return true, nil
}

// overCost reports, with an event, whether n attempts of req to dest, each
// at Config.Cost, may cost more than req's Contract.MaxCost.
func (h *Hedger) overCost(ctx context.Context, req *portico.Request, n int, dest string) bool {
	k := req.Contract
	if h.cost == nil || k == nil || k.MaxCost <= 0 || float64(n)*h.cost(req) <= k.MaxCost {
		return false
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventHedge, Route: dest, Reason: "max cost"})
	return true
}

// AsHedge returns a copy of req marked as a hedge ([portico.Request.Hedge]):
// the Request of an Attempt that a [Plan]'s Next prepares with a charge
// func, so that the retry layer it reaches deposits nothing in the budget
// the hedge was charged to. One allocation; req is not modified.
func AsHedge(req *portico.Request) *portico.Request {
	c := req.Clone()
	c.Hedge = true
	return c
}

// Ended stops the race at an error another attempt to the same destination
// would repeat, by portico.FaultOf: the caller's, the request's unless an
// answer came back (another may pass), the route's for every request
// (Unusable), a refusal not to be retried (Incompatible). (The race
// ignores it for a winner and for an attempt that Lost.)
func (p *single) Ended(_ context.Context, _ int, _ *Attempt, res *Result) error {
	switch f, c := portico.FaultOf(res.Err); {
	case f == portico.FaultCaller, f == portico.FaultRequest && c != portico.InvalidResponse,
		c == portico.Unusable, c == portico.Incompatible:
		return res.Err
	}
	return nil
}
