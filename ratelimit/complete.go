package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/portico-llm/portico"
)

// complete ends a call admitted with t: it settles the token reservation,
// adopts the provider's view of its limits, records the program's service
// and frees the slot (or hands it to the best waiter).
//
// The common completion (no provider view, no program, a refund of fewer
// than 2^20 tokens or none, a fast ticket) takes no lock: it adds itself to
// the entry's done counter with one atomic add, and the next locked
// operation on the key applies it first (see settle), which gives every
// admission the same level and slot count as applying it here would. Only
// when calls are queued does it lock, to hand its slot over.
func (l *Limiter) complete(t *ticket, resp *portico.Response, err error, panicked bool) {
	var rl *portico.RateLimit
	if resp != nil {
		rl = resp.RateLimit
	} else if err != nil {
		var pe *portico.Error
		if errors.As(err, &pe) {
			rl = pe.RateLimit
		}
	}
	d := 0 // tokens back to the bucket; < 0: charged
	if t.reserve > 0 && !panicked {
		if resp != nil {
			if used := resp.Usage.InputTokens + resp.Usage.OutputTokens; used > 0 {
				d = t.reserve - used
			}
		} else {
			d = Refund(err, t.in, t.max) // the billed usage, if err carries it
		}
	}
	e := t.e
	if t.fast && rl == nil && t.prog == nil && !panicked && d >= 0 && d < maxFastRefund {
		e.done.Add(1 + uint64(d)<<doneShift)
		if e.queued.Load() {
			e.lock() // settles this completion
			l.dispatch(e, l.now())
			e.mu.Unlock()
		}
		return
	}
	e.lock()
	if d != 0 && e.lim.Tokens > 0 {
		if d > 0 {
			e.tok.refund(float64(d))
		} else {
			e.tok.charge(float64(-d), float64(e.lim.Tokens)) // down to one period's quota
		}
	}
	var now time.Duration
	if rl != nil || t.prog != nil || len(e.queue) > 0 {
		now = l.now()
	}
	if rl != nil {
		e.adopt(now, rl, l.cfg.MaxProviderHold)
	}
	if t.prog != nil {
		t.prog.attained += now - t.start
		t.prog.active--
		t.prog.lastSeen = now
	}
	l.releaseLocked(e, now)
	e.mu.Unlock()
	if rl != nil && l.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		l.cfg.Logger.LogAttrs(context.Background(), slog.LevelDebug, "ratelimit: provider view",
			slog.Bool("tokens_known", rl.Tokens.Known), slog.Int("tokens_remaining", rl.Tokens.Remaining),
			slog.Bool("requests_known", rl.Requests.Known), slog.Int("requests_remaining", rl.Requests.Remaining))
	}
}

// Refund returns the tokens a [Limiter] gives back to the token bucket for a
// call that reserved in + maxOut tokens (N_in + N_max) and failed with err;
// a negative result is a charge.
//
// When err carries the usage the provider billed for the failed call
// ([portico.Error.Usage], non-nil, with input + output above 0: an answer
// rejected by validation, a stream cut after the provider reported usage),
// the call is settled on it exactly as a success is, whatever the class:
// Refund returns (in + maxOut) - (usage input + usage output), which is
// maxOut - N_out given back plus the difference between the estimate and
// the billed input, and negative (charged) when the usage exceeds the
// reservation. Usage that bills nothing is no more informative than a
// success without usage, and the class rule below applies.
//
// Without billed usage, the rule gives back only what the error class
// and the HTTP status make safe, since a provider may count a failed call
// against its limits; an outcome that may have generated output
// refunds nothing:
//
//   - [portico.Rejected], and [portico.Permanent], [portico.Incompatible],
//     [portico.Transient] or [portico.RateLimited] with no HTTP status
//     (refused locally or before the request was sent, e.g. connection
//     refused, or an inner Limiter's refusal): in + maxOut, all of it;
//   - [portico.Permanent], [portico.Incompatible], [portico.RateLimited] (a
//     429: no output, but the input may count) or [portico.Transient] (a 5xx
//     answer instead of generation) with an error status, 400 or above:
//     maxOut, the output reserve;
//   - the same classes with a status below 400 (an error event inside an
//     HTTP 200 stream, after output may have begun), [portico.Ambiguous],
//     [portico.Canceled], [portico.Deadline], [portico.InvalidResponse]
//     (output was or may have been generated), and an error that is not a
//     [*portico.Error] (nothing is known): 0.
//
// The class and status are those of the first [*portico.Error] in err's
// tree; the usage is [portico.UsageOf]'s, the first one carried anywhere in
// it, as retry and fallback read it.
//
// A call that succeeded refunds (in + maxOut) - (usage input + usage output)
// instead, and is charged the excess when usage exceeds the reservation; one
// that reports no usage at all refunds nothing.
func Refund(err error, in, maxOut int) int {
	var pe *portico.Error
	if !errors.As(err, &pe) {
		return 0 // unclassified: nothing is known to be safe
	}
	if u := portico.UsageOf(err); u != nil {
		if used := u.InputTokens + u.OutputTokens; used > 0 {
			return in + maxOut - used // as for a success
		}
	}
	switch pe.Class {
	case portico.Rejected:
		return in + maxOut
	case portico.Permanent, portico.Incompatible, portico.Transient, portico.RateLimited:
		switch {
		case pe.Status == 0:
			return in + maxOut
		case pe.Status >= 400:
			return maxOut
		}
	}
	return 0
}

// adopt takes in a provider's view of its limits, announced with a response
// or an error: each bucket adopts the tighter of the provider's view and its
// configured limit until the provider's reset, for hold
// ([Config.MaxProviderHold]) at most. The caller holds e.mu.
func (e *entry) adopt(now time.Duration, rl *portico.RateLimit, hold time.Duration) {
	if q := rl.Tokens; q.Known && e.lim.Tokens > 0 {
		e.tok.adopt(now, q.Remaining, q.Limit, q.Reset, hold)
	}
	if q := rl.Requests; q.Known && e.lim.Requests > 0 {
		e.req.adopt(now, q.Remaining, q.Limit, q.Reset, hold)
	}
}
