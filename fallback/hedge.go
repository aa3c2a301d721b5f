package fallback

import (
	"context"
	"sync"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

// race runs the request's candidates, n of them, as a [hedge.Hedger.Run]
// race: the first candidate that passes the filter at once, the next one
// as a hedge when the first has not answered after the Hedger's delay (the
// route's latency), and after a failure that moves on, the next as the
// sequential walk would. The first answer wins, stamped as any answer;
// each attempt the race canceled is a hop with Reason "hedge lost".
func (r *request) race(ctx context.Context, h *hedge.Hedger, n int, p *plan) (*portico.Response, error) {
	p.n = n // p is r's, as hedged.init left it
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

// hedged is a raced request's state: its walk's and its plan. Nothing of
// the race can reach it once Run returned, so it is reused: in a slot of
// its Group (see Group.race), else from hedgedPool.
type hedged struct {
	r request
	p plan
}

var hedgedPool = sync.Pool{New: func() any { return new(hedged) }}

// init readies a zero hs for g's requests.
func (hs *hedged) init(g *Group) {
	hs.r.g, hs.r.est, hs.r.plan, hs.p.r = g, -1, &hs.p, &hs.r
	hs.p.tries = hs.p.buf[:0]
}

// race runs a request the group's Hedger may hedge (see request.race) on
// reused state: its plan escapes to the Hedger, and the walk's state with
// it. A slot's state stays init'ed between requests, and clear writes back
// only what a request set: a whole new state is hundreds of bytes of
// pointers, each a write barrier while the garbage collector marks.
func (g *Group) race(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	sl := g.hedged.Claim()
	if sl == nil {
		hs := hedgedPool.Get().(*hedged)
		hs.init(g)
		hs.r.req = req
		resp, err := hs.r.run(ctx)
		*hs = hedged{}
		hedgedPool.Put(hs)
		return resp, err
	}
	hs := sl.V.Load()
	if hs == nil {
		hs = new(hedged)
		hs.init(g)
		sl.V.Store(hs)
	}
	ok := false
	defer func() {
		if !ok { // a Model panicked: its state is left as it was
			sl.V.Store(nil)
		}
		sl.Release()
	}()
	hs.r.req = req
	resp, err := hs.r.run(ctx)
	hs.clear()
	ok = true
	return resp, err
}

// clear makes hs, which a request used, as init left it (but for the
// routes of its tries and, without a Policy, its primary: the group's
// own), writing only the fields that request set. A field added to request or plan is cleared
// here (TestHedgedClear checks it).
func (hs *hedged) clear() {
	r, p := &hs.r, &hs.p
	r.req = nil
	r.est, r.learned, r.spent, r.billed = -1, 0, 0, 0
	if r.hops != nil {
		r.hops = nil
	}
	if r.wrong != nil {
		r.wrong = nil
	}
	if r.until != (time.Time{}) {
		r.until = time.Time{}
	}
	if r.primary != nil && r.g.cfg.Policy != nil {
		r.primary = nil // rank's skip reads it before Next sets it; in Routes order it is Routes[0]
	}
	r.delivered, r.hasDL, r.reserve, r.left, r.fresh = false, false, 0, 0, false
	if !r.deadline.IsZero() {
		r.deadline = time.Time{}
	}
	if r.order != nil {
		r.order = nil
	}
	r.called, r.fit, r.fitIn, r.cooled = false, 0, 0, 0
	if r.cont != nil {
		r.cont = nil
	}
	p.n, p.pos, p.running = 0, 0, 0
	if p.stop != nil {
		p.stop = nil
	}
	used := p.tries
	if len(used) > len(p.buf) {
		used, p.tries = p.buf[:], p.buf[:0] // it grew out of buf
	} else {
		p.tries = p.tries[:0]
	}
	for i := range used { // each keeps its route, one of the group's (see addTry)
		p.buf[i].idx, p.buf[i].est = 0, 0
	}
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
	buf     [2]try
}

// try is one attempt of the race: its route (the context of its share,
// and the share to Cancel once it ended, are its Attempt's).
type try struct {
	rt  *portico.Route
	idx int
	est float64 // its estimated cost, in plan.running while it runs
}

// Next prepares the next candidate that passes the filter, recording the
// routes it skips as the sequential walk does. A hedge is charged first and
// not made (nothing consumed) when the budget is empty or its allowance
// below MinAttempt; any other attempt without time stops the race.
func (p *plan) Next(ctx context.Context, i int, charge func(string) bool, a *hedge.Attempt) (bool, error) {
	r := p.r
	for ; p.pos < p.n; p.pos++ {
		rt, idx := r.candidate(p.pos)
		if p.pos == 0 {
			if r.primary != rt { // see hedged.clear
				r.primary = rt
			}
		}
		if reason := r.skip(rt, idx); reason == reasonWrong {
			p.stop = r.wrong // wrong on any route: nothing more is called
			return false, p.stop
		} else if reason != "" {
			r.skipped(ctx, rt, idx, reason)
			continue
		}
		cctx, end, _, ok := r.share(ctx, p.pos, false)
		share := cancelFunc(end) // a raced stream's share bounds it whole
		if !ok {
			if charge != nil {
				return false, nil // no time for a hedge: the running attempt goes on
			}
			r.hop(ctx, rt, reasonDeadline, nil)
			p.stop = r.outOfTime(ctx)
			return false, p.stop
		}
		var est float64
		if k := r.req.Contract; k != nil && k.MaxCost > 0 {
			est = r.estimate(rt)
			// The attempts running are likely billed whichever wins: a
			// hedge that, with them, may cost more than the contract
			// allows is not made, as the walk would not move on.
			if charge != nil && r.spent+p.running+est > k.MaxCost {
				share.Cancel()
				portico.Observe(ctx, portico.Event{Kind: portico.EventHedge, Route: rt.Name, Reason: "max cost"})
				return false, nil
			}
		}
		if charge != nil && !charge(rt.Name) {
			share.Cancel()
			return false, nil
		}
		p.pos++
		p.running += est
		p.addTry(rt, idx, est)
		if r.g.stats != nil {
			r.g.stats.Start(idx)
		}
		req := rt.RequestFor(r.req)
		if charge != nil {
			req = hedge.AsHedge(req) // charged to rt's budget: its retry layer deposits nothing
		}
		setAttempt(a, rt, req, cctx, cancelFunc(share), &r.g.latency[idx])
		return true, nil
	}
	return false, nil
}

// addTry appends attempt len(p.tries)'s try, writing the route of one in
// buf only when it changes (see setAttempt): clear keeps it.
func (p *plan) addTry(rt *portico.Route, idx int, est float64) {
	n := len(p.tries)
	if n == cap(p.tries) {
		p.tries = append(p.tries, try{rt: rt, idx: idx, est: est})
		return
	}
	p.tries = p.tries[:n+1]
	t := &p.tries[n]
	if t.rt != rt {
		t.rt = rt
	}
	t.idx, t.est = idx, est
}

// setAttempt sets every field of *a for an attempt to rt, whose sketch is
// lat, with req under cctx and share (nil: none). It writes a pointer only
// where it changes (each is a write barrier while the garbage collector
// marks): a race in a slot keeps its first attempt's Model, Destination
// and Latency, which only this plan sets to rt's sketch, and so to rt's
// Model and Name.
func setAttempt(a *hedge.Attempt, rt *portico.Route, req *portico.Request, cctx context.Context, share cancelFunc, lat *hedge.Latency) {
	if a.Latency != lat {
		a.Model, a.Destination, a.Latency = rt.Model, rt.Name, lat
	}
	a.Request, a.Context = req, cctx
	switch {
	case share != nil: // the share is the attempt's alone, and ends with it (Ended)
		a.Cancel = share
	case a.Cancel != nil:
		a.Cancel = nil
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
	share := a.Cancel                // the attempt's share (see setAttempt), or nil
	if res.Err == nil && !res.Lost { // the answer: no defer on the hot path
		if share != nil {
			share.Cancel()
		}
		return nil
	}
	if share != nil {
		defer share.Cancel() // after judge, which reads whether the share ran out
	}
	switch {
	case res.Unsent: // never called: no hop, nothing billed
		return nil
	case res.Lost:
		if res.Err != nil {
			r.charge(t.rt, portico.ClassOf(res.Err), res.Err)
		} else if resp := res.Response; resp != nil {
			// It answered too, as the winner did, and was billed for it.
			cost := resp.Cost
			if cost == 0 {
				cost = t.rt.Capabilities.Cost(resp.Usage)
			}
			r.billed += cost
			r.spent += cost
		}
		r.hops = append(r.hops, portico.Hop{Route: t.rt.Name, Reason: reasonHedgeLost, Err: res.Err})
		return nil
	}
	r.delivered = res.Delivered
	if _, stop, err := r.judge(ctx, a.Context, t.rt, t.idx, res.Err); stop {
		p.stop = err
		return err
	}
	return nil
}

// cancelFunc is a share's end as an Attempt's Cancel; nil: none.
type cancelFunc context.CancelFunc

// Cancel ends the share, if there is one.
func (f cancelFunc) Cancel() {
	if f != nil {
		f()
	}
}
