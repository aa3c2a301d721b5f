package breaker

import (
	"context"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// trip moves closed generation gen to Open, unless another call did first.
func (b *Breaker) trip(ctx context.Context, gen uint64, now int64, reason string, class portico.Class) {
	b.mu.Lock()
	if b.word.Load() != gen<<2|uint64(Closed) {
		b.mu.Unlock()
		return
	}
	tr := b.openLocked(gen, now, Closed, reason, class)
	b.mu.Unlock()
	b.notify(ctx, tr)
}

// openLocked moves from state `from` of generation gen to Open, for
// Config.OpenFor or until the end of the latest Retry-After announced,
// whichever is later. b.mu is held.
func (b *Breaker) openLocked(gen uint64, now int64, from State, reason string, class portico.Class) Transition {
	until := int64(mono.Add(time.Duration(now), b.cfg.OpenFor)) // an OpenFor near the largest Duration: open for good
	until = max(until, b.announced.Load())
	d := time.Duration(until - now)
	b.openUntil.Store(until)
	b.word.Store((gen+1)<<2 | uint64(Open))
	return Transition{Name: b.cfg.Name, From: from, To: Open, Reason: reason, Class: class, OpenFor: d, Generation: gen + 1}
}

// notify reports a transition to the hook, the context's Observer and the
// logger. It is never called under b.mu.
func (b *Breaker) notify(ctx context.Context, tr Transition) {
	if b.shared != nil && tr.To == Open {
		b.shared.Set(b.sharedKey, time.Now().Add(tr.OpenFor))
	}
	if h := b.cfg.OnStateChange; h != nil {
		h(tr)
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventBreakerState, Route: tr.Name, Class: tr.Class, Delay: tr.OpenFor, Reason: tr.To.String()})
	if l := b.cfg.Logger; l != nil {
		args := []any{"route", tr.Name, "from", tr.From.String(), "to", tr.To.String(), "reason", tr.Reason, "generation", tr.Generation}
		if tr.To == Open {
			l.WarnContext(ctx, "breaker opened", append(args, "class", tr.Class.String(), "open_for", tr.OpenFor)...)
		} else {
			l.InfoContext(ctx, "breaker state changed", args...)
		}
	}
}

// notifyHolding is notify for a transition made by a call that may hold a
// probe slot (held): if the hook, the Observer or the logger panics, the slot
// is released before the panic goes on, or the breaker would stay half-open
// with its probes busy for good.
func (b *Breaker) notifyHolding(ctx context.Context, tr Transition, held bool) {
	done := false
	defer func() {
		if !done && held {
			b.mu.Lock()
			b.probes.Add(-1)
			b.mu.Unlock()
		}
	}()
	b.notify(ctx, tr)
	done = true
}

// rejected returns the error of a refused call: probe is the time until the
// breaker admits a probe, 0 when unknown (half-open with its probes busy).
func (b *Breaker) rejected(probe time.Duration, reason string) error {
	return &portico.Error{Class: portico.Rejected, RefusedBy: portico.CircuitBreaker, Model: b.cfg.Name, Reason: reason,
		RetryAfter: probe, NotSent: true, Err: ErrOpen}
}

// notClosed handles a call that found the breaker open or half-open: reject,
// or move to half-open and admit the call as a probe.
func (b *Breaker) notClosed(ctx context.Context, req *portico.Request, next portico.Model, word uint64) (*portico.Response, error) {
	now := b.nanos()
	for {
		switch State(word & 3) {
		case Closed:
			return b.closedCall(ctx, req, next, word)
		case Open:
			if until := b.openUntil.Load(); now < until {
				return nil, b.rejected(time.Duration(until-now), "breaker open")
			}
		}
		// Open and due, or half-open: decide under the lock.
		b.mu.Lock()
		if cur := b.word.Load(); cur != word {
			b.mu.Unlock()
			word = cur
			continue
		}
		var tr Transition
		moved := false
		gen := word >> 2
		if State(word&3) == Open {
			gen++
			b.successes = 0
			b.word.Store(gen<<2 | uint64(HalfOpen))
			tr = Transition{Name: b.cfg.Name, From: Open, To: HalfOpen, Reason: "open interval elapsed", Generation: gen}
			moved = true
		}
		admitted := int(b.probes.Load()) < b.cfg.Probes
		if admitted {
			b.probes.Add(1)
		}
		b.mu.Unlock()
		if moved {
			b.notifyHolding(ctx, tr, admitted)
		}
		if !admitted {
			return nil, b.rejected(0, "breaker half-open, probes busy")
		}
		return b.probe(ctx, req, next, gen, now)
	}
}

// probe makes one half-open call of generation gen and acts on its outcome.
// A probe ended by the caller's own OnChunk (a panic or an error) only frees
// its slot.
func (b *Breaker) probe(ctx context.Context, req *portico.Request, next portico.Model, gen uint64, start int64) (*portico.Response, error) {
	req, s := guardStream(req)
	done := false
	defer func() {
		if !done { // a panic: a failed probe unless the caller's OnChunk raised it; release it, let it go on
			b.probeOutcome(ctx, gen, start, s.counted(errPanic))
		}
	}()
	resp, err := next.Generate(ctx, req)
	done = true
	if err == nil && resp == nil { // next broke the Model contract: a failed probe
		err = portico.ErrNilResponse
	}
	b.probeOutcome(ctx, gen, start, s.counted(err))
	return resp, err
}

func (b *Breaker) probeOutcome(ctx context.Context, gen uint64, start int64, err error) {
	class, counted, failed, _ := outcome(err) // an unanswered probe failed
	now := b.nanos()
	if ra := portico.RetryAfterOf(err); failed && ra > 0 {
		b.announce(now + int64(min(ra, MaxRetryAfterHold)))
	}
	slow := b.cfg.SlowCall > 0 && now-start >= int64(b.cfg.SlowCall)
	b.mu.Lock()
	// The slot is released whatever happened meanwhile: probes counts every
	// probe still running, even one of an earlier half-open period, so that no
	// more than Probes ever run at once.
	b.probes.Add(-1)
	if b.word.Load() != gen<<2|uint64(HalfOpen) {
		b.mu.Unlock() // the period this probe belonged to is over
		return
	}
	var tr Transition
	switch {
	case !counted:
		// Says nothing about the route: the slot is freed, nothing is learnt.
		b.mu.Unlock()
		return
	case failed || slow:
		reason := "probe failed"
		if !failed {
			reason = "probe slow"
		}
		tr = b.openLocked(gen, now, HalfOpen, reason, class)
	default:
		b.successes++
		if b.successes < b.cfg.Probes {
			b.mu.Unlock()
			return
		}
		if b.ring != nil {
			b.ring.reset()
		}
		b.word.Store((gen+1)<<2 | uint64(Closed))
		tr = Transition{Name: b.cfg.Name, From: HalfOpen, To: Closed, Reason: "probes succeeded", Generation: gen + 1}
	}
	b.mu.Unlock()
	b.notify(ctx, tr)
}
