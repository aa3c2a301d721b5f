package ratelimit

import (
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/failopen"
	"github.com/portico-llm/portico/internal/mono"
)

// The local share of a shared Limiter (shared.local) follows what the
// store decides for this instance's calls, by internal/failopen's rule, so
// that when the store fails it holds what this instance had not used of
// its 1/N: the methods below apply the store's decisions to it. Each locks
// req's entry in the share (made at req's tier when new) and reads the
// clock once.

// mirrorTake charges the share for a call of cost tokens that the store
// admitted: one request and cost tokens, neither below zero.
func (l *Limiter) mirrorTake(req *portico.Request, cost int) {
	l.mirror(req, func(e *entry, now time.Duration) {
		e.req.chargeShare(now, 1)
		e.tok.chargeShare(now, float64(cost))
	})
}

// chargeShare charges n > 0 to a share's bucket (none: nothing), not
// below zero (failopen.Charge).
func (b *bucket) chargeShare(now time.Duration, n float64) {
	if b.rate > 0 && n > 0 {
		level, last := b.at(now)
		b.set(failopen.Charge(level, n), last)
	}
}

// mirrorRefused lowers the share's bucket which ("tokens" or "requests")
// for a call of cost tokens that the store refused with wait: the shared
// bucket held need - r·wait, need being the call's cost in that bucket and
// r the shared bucket's rate (lim's), and the share keeps at most 1/n of
// it.
func (l *Limiter) mirrorRefused(req *portico.Request, lim *Limits, which string, wait time.Duration, cost, n int) {
	l.mirror(req, func(e *entry, now time.Duration) {
		b, need, rate := &e.req, 1.0, lim.requestRate()
		if which == "tokens" {
			b, need, rate = &e.tok, float64(cost), lim.tokenRate()
		}
		if b.rate == 0 { // no such bucket in the share's limits
			return
		}
		level, last := b.at(now)
		b.set(failopen.Refused(level, need-rate*wait.Seconds(), n), last)
	})
}

// mirrorSettle gives the share what the store was given at the end of a
// call it admitted: d > 0 tokens back, never beyond the share's capacity;
// d < 0 charged, down to one period's quota of the share at most.
func (l *Limiter) mirrorSettle(req *portico.Request, d int) {
	if d == 0 {
		return
	}
	l.mirror(req, func(e *entry, _ time.Duration) { e.settleTokens(d) })
}

// mirror runs f on req's entry, locked, at the Limiter's now.
func (l *Limiter) mirror(req *portico.Request, f func(e *entry, now time.Duration)) {
	now := mono.Now()
	e := l.acquire(l.keyOf(req), req, now)
	f(e, now)
	e.replan() // a refund may let a waiter of the share in
	e.mu.Unlock()
}
