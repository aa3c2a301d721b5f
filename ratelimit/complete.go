package ratelimit

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// outcome is the class a Concurrency is told for a call that ended with
// err: its class, except that one portico.FaultOf finds unanswered or the
// caller's deadline (a layer's cut of a short share of it included) is
// Deadline, which no Concurrency counts.
func outcome(err error) portico.Class {
	f, c := portico.FaultOf(err)
	if f == portico.FaultUnanswered || f == portico.FaultCaller && c != portico.Canceled {
		return portico.Deadline
	}
	return c
}

// complete ends req's call admitted with t: it settles the token
// reservation (d tokens back, < 0 charged), adopts the provider's view of
// its limits, records the program's service and frees the slot (or hands
// it to the best waiter); what a refund frees goes at once to the
// waiters, first in line first.
//
// It reads the clock only when something needs it (a Concurrency, the
// provider's view, a program, a waiter): an admission at once reads it
// once, at admission, as x/time/rate's Allow does.
func (l *Limiter) complete(req *portico.Request, t *ticket, resp *portico.Response, err error, panicked bool) {
	var clock lazyClock
	if c := l.cfg.Concurrency; c != nil && !panicked {
		c.Done(clock.now()-t.granted-t.read, t.inflight, outcome(err))
	}
	rl, d := l.settlement(req, t, resp, err)
	e := t.e
	e.mu.Lock()
	e.settleTokens(d)
	if rl != nil {
		e.adopt(clock.now(), rl, l.cfg.MaxProviderHold)
	}
	if t.prog != nil {
		l.attain(t, clock.now())
	}
	if e.queued() > 0 { // dispatch hands the slot on at now
		clock.now()
	}
	l.releaseLocked(e, clock.read)
	e.mu.Unlock()
	if rl != nil {
		l.logView(rl)
	}
}

// lazyClock reads mono.Now at its first use only; read is 0 until then.
type lazyClock struct{ read time.Duration }

func (c *lazyClock) now() time.Duration {
	if c.read == 0 {
		c.read = mono.Now()
	}
	return c.read
}

// settleTokens gives d tokens back to e's bucket (d < 0: charges -d, down
// to one period's quota) and replans the holds a refund may fit; e.mu held.
func (e *entry) settleTokens(d int) {
	switch {
	case d == 0 || e.lim.Tokens == 0:
	case d > 0:
		e.tok.refund(float64(d))
		e.replan()
	default:
		e.tok.charge(float64(-d), float64(e.lim.Tokens)) // down to one period's quota
	}
}

// attain records the service of t's call, ended at now, to its program
// (t.prog, not nil): the longest path under ATLAS, the sum otherwise; the
// entry's mu held.
func (l *Limiter) attain(t *ticket, now time.Duration) {
	p := t.prog
	if l.cfg.Queue.Order == ATLAS {
		p.attained = max(p.attained, t.path+now-t.start) // the longest path
	} else {
		p.attained += now - t.start
	}
	p.active--
	p.lastSeen = now
}

// logView logs a provider's view of its limits at debug level.
func (l *Limiter) logView(rl *portico.RateLimit) {
	if !l.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.cfg.Logger.LogAttrs(context.Background(), slog.LevelDebug, "ratelimit: provider view",
		slog.Bool("tokens_known", rl.Tokens.Known), slog.Int("tokens_remaining", rl.Tokens.Remaining),
		slog.Bool("requests_known", rl.Requests.Known), slog.Int("requests_remaining", rl.Requests.Remaining))
}

// observe gives the input tokens resp reports for req to the Estimator
// when it learns from them ([portico.InputObserver]), with the estimate
// it gave for t; a call not priced (t.in and t.reserve 0: no token
// bucket, or a shared Limiter's slots) gives no sample.
func (l *Limiter) observe(req *portico.Request, t *ticket, resp *portico.Response) {
	if o, ok := l.cfg.Estimator.(portico.InputObserver); ok && (t.in > 0 || t.reserve > 0) && resp.Usage.InputTokens > 0 {
		o.ObserveInputTokens(req, cmp.Or(t.est, t.in), resp.Usage.InputTokens) // the Estimator's own estimate
	}
}

// settlement returns what ends req's call admitted with t: the provider's
// view of its limits (nil: none) and the tokens back to the bucket, d (< 0:
// charged), from the usage or, without it, [Refund]; nothing for a call
// that panicked (neither resp nor err). Every path of a call, local,
// shared, leased or failing open, settles here once: an answer is
// observed here ([Limiter.observe]).
func (l *Limiter) settlement(req *portico.Request, t *ticket, resp *portico.Response, err error) (rl *portico.RateLimit, d int) {
	if resp != nil {
		l.observe(req, t, resp)
		if used := resp.Usage.Limited(); used > 0 && t.reserve > 0 {
			d = t.reserve - used
		}
		return resp.RateLimit, d
	}
	var pe *portico.Error
	if errors.As(err, &pe) {
		rl = pe.RateLimit
	}
	if t.reserve > 0 {
		d = Refund(err, t.in, t.max) // the billed usage, if err carries it; 0 for a nil err
	}
	return rl, d
}

// Refund returns the tokens a [Limiter] gives back for a call that reserved
// in + maxOut tokens (N_in + N_max) and failed with err; a negative result
// is a charge. By the first [*portico.Error] in err's tree, in order:
//
//   - usage billed ([portico.UsageOf]): in + maxOut - used, where used is
//     what the provider's limit counts ([portico.Usage.Limited]);
//   - nothing sent ([portico.NothingSent]): in + maxOut;
//   - a refusal wrapping calls that may have been sent: the least this
//     rule gives back for any of them;
//   - Permanent, Incompatible, Unusable, Transient or RateLimited with a
//     status of 400 or above: maxOut (the input may count);
//   - anything else (Ambiguous, InvalidResponse, an error in a 200 stream,
//     a foreign error): 0.
//
// The package documentation, Refunds, says why.
func Refund(err error, in, maxOut int) int {
	var pe *portico.Error
	if !errors.As(err, &pe) {
		return 0 // unclassified: nothing is known to be safe
	}
	if u := portico.UsageOf(err); u != nil {
		if used := u.Limited(); used > 0 {
			return in + maxOut - used // as for a success
		}
	}
	return refund(pe, in, maxOut)
}

// refund is Refund's rule for e, without usage.
func refund(e *portico.Error, in, maxOut int) int {
	if portico.NothingSent(e) {
		return in + maxOut
	}
	switch e.Class {
	case portico.Rejected, portico.Permanent, portico.Incompatible, portico.Unusable, portico.Transient, portico.RateLimited:
		switch {
		case e.Class != portico.Rejected && e.Status >= 400:
			return maxOut
		case e.Class == portico.Rejected || e.Status == 0:
			if !portico.SentIn(e.Err) {
				return in + maxOut // refused before sending, by a layer that does not set NotSent
			}
			// A layer's refusal after calls that may have been sent (they
			// are in its tree): what the least of them gives back.
			return leastBack(e.Err, in, maxOut)
		}
	}
	return 0
}

// leastBack returns the least that refund gives back for the calls in err's
// tree that may have been sent, in + maxOut when none was: each *Error found
// speaks for its own tree.
func leastBack(err error, in, maxOut int) int {
	least := in + maxOut
	for err != nil {
		switch x := err.(type) {
		case *portico.Error:
			if !portico.NothingSent(x) {
				least = min(least, refund(x, in, maxOut))
			}
			return least
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, c := range x.Unwrap() {
				least = min(least, leastBack(c, in, maxOut))
			}
			return least
		default:
			return least
		}
	}
	return least
}

// adopt takes in a provider's view of its limits, announced with a response
// or an error: each bucket adopts the tighter of the provider's view and its
// configured limit until the provider's reset, for hold
// ([Config.MaxProviderHold]) at most. The token bucket counts input plus
// output, as RateLimit.Tokens does, and adopts that quota as it is; a quota
// on input or output alone (InputTokens, OutputTokens) is adopted in
// proportion (see share). The caller holds e.mu.
func (e *entry) adopt(now time.Duration, rl *portico.RateLimit, hold time.Duration) {
	if e.lim.Tokens > 0 {
		b := e.lim.TokenBurst
		for _, q := range [...]portico.Quota{rl.Tokens, share(rl.InputTokens, b), share(rl.OutputTokens, b)} {
			e.tok.adoptQuota(now, q, hold)
		}
	}
	if e.lim.Requests > 0 {
		e.req.adoptQuota(now, rl.Requests, hold)
	}
}

// share scales a quota on one part of the tokens (input or output alone) to
// a token bucket of burst b counting both: the bucket may hold the share of
// b the quota has left, b·Remaining/Limit, out of b. An exhausted part (0
// remaining) so empties the bucket until its reset, and one half used holds
// it at half, while a lopsided split (80,000 input and 16,000 output tokens a
// minute against a bucket of 96,000) does not cap every call at the smaller
// part. Without a Limit only an exhausted part says anything (0 of unknown);
// the result is not Known when the quota says nothing.
func share(q portico.Quota, b int) portico.Quota {
	switch {
	case !q.Known:
		return portico.Quota{}
	case q.Limit <= 0:
		return portico.Quota{Known: q.Remaining <= 0, Reset: q.Reset}
	}
	left := float64(min(max(q.Remaining, 0), q.Limit)) / float64(q.Limit)
	return portico.Quota{Known: true, Remaining: int(left * float64(b)), Limit: b, Reset: q.Reset}
}
