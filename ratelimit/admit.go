package ratelimit

import (
	"context"
	"time"

	"github.com/portico-llm/portico"
	"golang.org/x/time/rate"
)

// admit takes a slot of the in-flight cap (queueing for one if configured)
// and then the call's share of both buckets, waiting in Wait mode. On success
// t.e holds the key's entry, with the slot and the reservation counted.
func (l *Limiter) admit(ctx context.Context, req *portico.Request, t *ticket) error {
	now := time.Now()
	k := l.keyOf(req)
	e := l.acquire(k, now) // locked
	needProg := l.cfg.Queue > 0 && l.cfg.Order != FCFSCall && req.Identity.SessionID != ""
	if needProg {
		t.prog = e.program(req.Identity.SessionID, now, l.seq.Add(1), l.cfg.ProgramTTL)
		t.prog.active++
		t.prog.lastSeen = now
	}
	t.e = e
	if lmax := e.lim.MaxInFlight; lmax > 0 && (e.inflight >= lmax || len(e.queue) > 0) {
		if len(e.queue) >= l.cfg.Queue {
			l.unprogram(t, now)
			e.mu.Unlock()
			return l.shed(ctx, req)
		}
		w := &waiter{ready: make(chan struct{}), seq: l.seq.Add(1), enq: now, prog: t.prog}
		e.queue = append(e.queue, w)
		e.mu.Unlock()
		select {
		case <-w.ready:
		case <-ctx.Done():
			e.mu.Lock()
			if w.granted {
				l.releaseLocked(e, time.Now())
			} else {
				e.remove(w)
			}
			l.unprogram(t, now)
			e.mu.Unlock()
			return portico.FromContext(ctx)
		}
		e.mu.Lock()
		now = time.Now()
	} else {
		e.inflight++
	}
	if t.prog != nil {
		t.start = now
	}
	waited := false
	for {
		ok, wait, which, err := e.take(now, t.reserve)
		if ok {
			e.mu.Unlock()
			return nil
		}
		deadline, hasDeadline := ctx.Deadline()
		if err != nil || l.cfg.Mode == Reject || wait > l.cfg.MaxWait || (hasDeadline && now.Add(wait).After(deadline)) {
			l.releaseLocked(e, now)
			l.unprogram(t, now)
			e.mu.Unlock()
			if err != nil {
				return err
			}
			return l.limited(ctx, req, which, wait)
		}
		e.mu.Unlock()
		if !waited {
			waited = true
			portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitWait, Route: req.Model, Delay: wait, Reason: which})
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			e.mu.Lock()
			l.releaseLocked(e, time.Now())
			l.unprogram(t, now)
			e.mu.Unlock()
			return portico.FromContext(ctx)
		}
		e.mu.Lock()
		now = time.Now()
	}
}

// take admits cost tokens and one request at now, or takes nothing and
// returns the wait after which it would succeed and which bucket refused
// ("tokens" or "requests"). The caller holds e.mu.
func (e *entry) take(now time.Time, cost int) (bool, time.Duration, string, error) {
	if !e.reqUntil.IsZero() && !now.Before(e.reqUntil) {
		e.req.SetLimitAt(now, rate.Limit(e.lim.requestRate()))
		e.reqUntil = time.Time{}
	}
	n := float64(cost)
	if e.lim.Tokens > 0 {
		if cost > e.lim.TokenBurst { // limits lowered by SetLimit since pricing
			ce := &CapacityError{Input: cost, Capacity: e.lim.TokenBurst}
			return false, 0, "tokens", &portico.Error{Class: portico.Permanent, Reason: ce.Error(), Err: ce}
		}
		if ok, wait := e.tok.take(now, n); !ok {
			if e.req != nil {
				wait = max(wait, e.requestWait(now))
			}
			return false, wait, "tokens", nil
		}
	}
	if e.req != nil && !e.req.AllowN(now, 1) {
		if e.lim.Tokens > 0 {
			e.tok.undo(n)
		}
		return false, e.requestWait(now), "requests", nil
	}
	return true, 0, "", nil
}

// requestWait is how long until the request bucket holds one request, with
// the provider's slower rate until reqUntil taken into account.
func (e *entry) requestWait(now time.Time) time.Duration {
	need := 1 - e.req.TokensAt(now)
	if need <= 0 {
		return 0
	}
	r := e.lim.requestRate()
	var d float64
	if !e.reqUntil.IsZero() && e.reqRate < r {
		seg := e.reqUntil.Sub(now).Seconds()
		if gained := e.reqRate * seg; gained >= need {
			return seconds(need / e.reqRate)
		} else {
			need -= gained
			d = seg
		}
	}
	return seconds(d + need/r)
}

// releaseLocked frees a slot, handing it to the best waiter if any.
func (l *Limiter) releaseLocked(e *entry, now time.Time) {
	if !e.handoff(&l.cfg, now) {
		e.inflight--
	}
}

// unprogram undoes the program bookkeeping of a call that did not run.
func (l *Limiter) unprogram(t *ticket, now time.Time) {
	if t.prog != nil {
		t.prog.active--
		t.prog.lastSeen = now
	}
}

func (l *Limiter) shed(ctx context.Context, req *portico.Request) error {
	portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitReject, Route: req.Model, Class: portico.Rejected, Reason: "overloaded"})
	l.cfg.Logger.LogAttrs(ctx, -4, "ratelimit: shed", logModel(req.Model))
	return &portico.Error{Class: portico.Rejected, Model: req.Model, Reason: "overloaded", Err: ErrOverloaded}
}

func (l *Limiter) limited(ctx context.Context, req *portico.Request, which string, wait time.Duration) error {
	portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitReject, Route: req.Model, Class: portico.RateLimited, Delay: wait, Reason: which})
	l.cfg.Logger.LogAttrs(ctx, -4, "ratelimit: limited", logModel(req.Model), logWait(wait), logWhich(which))
	return &portico.Error{Class: portico.RateLimited, Model: req.Model, Reason: "rate limit: " + which, RetryAfter: wait, Err: ErrLimited}
}
