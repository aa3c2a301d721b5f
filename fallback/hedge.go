package fallback

import (
	"cmp"
	"context"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

// race runs a request the group's Hedger may hedge: run ranks its
// candidates as the walk does, then races them (request.race).
func (g *Group) race(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	r := &request{g: g, req: req, est: -1}
	r.plan = &plan{r: r}
	return r.run(ctx)
}

// race runs the request's candidates, n of them, as a [hedge.Hedger.Run]
// race: the first candidate that passes the filter at once, the next one
// as a hedge when the first has not answered after the Hedger's delay (the
// route's latency), and after a failure that moves on, the next as the
// sequential walk would. The first answer wins, stamped as any answer;
// each attempt the race canceled is a hop with Reason "hedge lost".
func (r *request) race(ctx context.Context, h *hedge.Hedger, n int, p *plan) (*portico.Response, error) {
	p.n = n
	// Run's error is p.stop, or the last attempt's, whose hop is recorded.
	resp, i, _ := h.Run(ctx, r.req, p)
	switch {
	case resp != nil:
		return p.tries[i].rt.Stamp(resp, r.hops, r.billed), nil
	case p.stop != nil:
		return nil, p.stop
	}
	return r.exhausted(ctx)
}

// plan is a request's [hedge.Plan] over the group's candidates.
type plan struct {
	r     *request
	n     int   // candidates in the request's order
	pos   int   // the next position to look at
	tries []try // per attempt
	// running is the estimated cost of the attempts running, counted
	// against Contract.MaxCost before a hedge (set only with a MaxCost).
	running float64
	stop    error // the error the race was stopped with, if any
}

// try is one attempt of the race: its route, its estimated cost (in
// plan.running while it runs) and what ends its share of the deadline
// once it ended (nil: none).
type try struct {
	rt  *portico.Route
	idx int
	est float64
	end func()
}

// Next prepares the next candidate that passes the filter, recording the
// routes it skips as the sequential walk does.
func (p *plan) Next(ctx context.Context, _ int, charge func(string) bool, a *hedge.Attempt) (bool, error) {
	r := p.r
	for ; p.pos < p.n; p.pos++ {
		switch rt, idx, reason := r.look(p.pos); reason {
		case "":
			return p.prepare(ctx, rt, idx, charge, a)
		case reasonWrong:
			p.stop = r.wrong // wrong on any route: nothing more is called
			return false, p.stop
		default:
			r.skipped(ctx, rt, idx, reason)
		}
	}
	return false, nil
}

// prepare readies an attempt to rt, the candidate at p.pos, in its share
// of the deadline. A hedge (charge non-nil) is charged last and not made,
// nothing consumed, when its allowance is below MinAttempt, its cost may
// exceed the Contract's MaxCost, or the budget is empty; any other attempt
// without time stops the race.
func (p *plan) prepare(ctx context.Context, rt *portico.Route, idx int, charge func(string) bool, a *hedge.Attempt) (bool, error) {
	r := p.r
	cctx, end, _, ok := r.share(ctx, p.pos, false) // a raced stream's share bounds it whole
	if !ok {
		if charge != nil {
			return false, nil // no time for a hedge: the running attempt goes on
		}
		p.stop = r.noTime(ctx, rt)
		return false, p.stop
	}
	t := try{rt: rt, idx: idx, end: end}
	est, affordable := p.cost(ctx, rt, charge != nil)
	if !affordable || charge != nil && !charge(rt.Name) {
		t.done()
		return false, nil
	}
	t.est = est
	p.add(t)
	req := rt.RequestFor(r.req)
	if charge != nil {
		req = hedge.AsHedge(req) // charged to rt's budget: its retry layer deposits nothing
	}
	*a = hedge.Attempt{Model: rt.Model, Request: req, Context: cctx, Destination: rt.Name, Latency: &r.g.latency[idx]}
	return true, nil
}

// add counts t as running: its position taken, its estimate counted
// against MaxCost, its call in the statistics.
func (p *plan) add(t try) {
	p.pos++
	p.running += t.est
	p.tries = append(p.tries, t)
	if s := p.r.g.stats; s != nil {
		s.Start(t.idx)
	}
}

// cost returns the estimated cost of an attempt to rt under a Contract's
// MaxCost (0 without one), and reports false, with an event, for a hedge
// that would exceed it: the attempts running are likely billed whichever
// wins, so a hedge that, with them, may cost more than the contract allows
// is not made, as the walk would not move on.
func (p *plan) cost(ctx context.Context, rt *portico.Route, hedged bool) (float64, bool) {
	r := p.r
	k := r.req.Contract
	if k == nil || k.MaxCost <= 0 {
		return 0, true
	}
	est := r.estimate(rt)
	if hedged && r.spent+p.running+est > k.MaxCost {
		portico.Observe(ctx, portico.Event{Kind: portico.EventHedge, Route: rt.Name, Reason: "max cost"})
		return 0, false
	}
	return est, true
}

// done ends t's share, if it has one.
func (t *try) done() {
	if t.end != nil {
		t.end()
	}
}

// Ended settles attempt i: the statistics learn from it, a loser is a hop,
// and a failure is judged as the sequential walk judges it.
func (p *plan) Ended(ctx context.Context, i int, a *hedge.Attempt, res *hedge.Result) error {
	r, t := p.r, &p.tries[i]
	p.running -= t.est
	if r.g.stats != nil {
		r.learn(ctx, t.idx, res.Err, res.CallerFailed, res.Elapsed, res.TTFT)
	}
	defer t.done() // after judge, which reads whether the share ran out
	switch {
	case res.Err == nil && !res.Lost, res.Unsent: // the answer; or never called: no hop, nothing billed
		return nil
	case res.Lost:
		p.lost(t, res)
		return nil
	}
	r.delivered = res.Delivered
	if _, stop, err := r.judge(ctx, a.Context, t.rt, t.idx, res.Err); stop {
		p.stop = err
		return err
	}
	return nil
}

// lost records attempt t, which the race canceled because another won, as
// a hop, billed as it failed or, when it answered too, as its answer.
func (p *plan) lost(t *try, res *hedge.Result) {
	r := p.r
	if res.Err != nil {
		r.charge(t.rt, res.Err)
	} else if resp := res.Response; resp != nil {
		r.bill(cmp.Or(resp.Cost, t.rt.Capabilities.Cost(resp.Usage)))
	}
	r.hops = append(r.hops, portico.Hop{Route: t.rt.Name, Reason: reasonHedgeLost, Err: res.Err})
}
