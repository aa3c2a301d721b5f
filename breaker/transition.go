package breaker

import (
	"context"
	"log/slog"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// trip moves closed generation gen to Open, unless another call did first.
func (b *Breaker) trip(ctx context.Context, gen uint64, now time.Duration, reason string, class portico.Class) {
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
func (b *Breaker) openLocked(gen uint64, now time.Duration, from State, reason string, class portico.Class) Transition {
	// An OpenFor near the largest Duration: open for good.
	until := max(int64(mono.Add(now, b.cfg.OpenFor)), b.announced.Load())
	b.openUntil.Store(until)
	b.word.Store((gen+1)<<2 | uint64(Open))
	return Transition{Name: b.cfg.Name, From: from, To: Open, Reason: reason, Class: class, OpenFor: time.Duration(until) - now, Generation: gen + 1}
}

// notify reports a transition to the hook, the context's Observer and the
// logger. It is never called under b.mu.
func (b *Breaker) notify(ctx context.Context, tr Transition) {
	if b.cfg.Shared != nil && tr.To == Open {
		b.cfg.Shared.Set(b.sharedKey, time.Now().Add(tr.OpenFor))
	}
	if h := b.cfg.OnStateChange; h != nil {
		h(tr)
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventBreakerState, Route: tr.Name, Class: tr.Class, Delay: tr.OpenFor, Reason: tr.To.String()})
	if l := b.cfg.Logger; l != nil {
		logTransition(ctx, l, tr)
	}
}

// logTransition logs tr to l: a warning when the breaker opened.
func logTransition(ctx context.Context, l *slog.Logger, tr Transition) {
	args := []any{"route", tr.Name, "from", tr.From.String(), "to", tr.To.String(), "reason", tr.Reason, "generation", tr.Generation}
	if tr.To != Open {
		l.InfoContext(ctx, "breaker state changed", args...)
		return
	}
	l.WarnContext(ctx, "breaker opened", append(args, "class", tr.Class.String(), "open_for", tr.OpenFor)...)
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
	now := mono.Now()
	for State(word&3) != Closed {
		if until := time.Duration(b.openUntil.Load()); State(word&3) == Open && now < until {
			return nil, b.rejected(until-now, "breaker open")
		}
		// Open and due, or half-open: decide under the lock.
		gen, tr, admitted, cur := b.takeProbe(word)
		if cur != word {
			word = cur
			continue
		}
		if tr.To == HalfOpen {
			b.notifyHolding(ctx, tr, admitted)
		}
		if !admitted {
			return nil, b.rejected(0, "breaker half-open, probes busy")
		}
		return b.call(ctx, req, next, gen<<2|uint64(HalfOpen), now)
	}
	return b.closedCall(ctx, req, next, word)
}

// takeProbe decides, under the lock, a call that found state word open and
// due or half-open: it moves an open breaker to half-open and takes a probe
// slot when one is free (admitted). It returns the half-open generation, the
// transition (zero when none) and the state it found, cur, which differs
// from word, and nothing is done, when the state moved meanwhile.
func (b *Breaker) takeProbe(word uint64) (gen uint64, tr Transition, admitted bool, cur uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur = b.word.Load(); cur != word {
		return 0, Transition{}, false, cur
	}
	gen, tr = b.halfOpenLocked(word)
	if admitted = int(b.probes.Load()) < b.cfg.Probes; admitted {
		b.probes.Add(1)
	}
	return gen, tr, admitted, cur
}

// halfOpenLocked moves state word, when Open, to HalfOpen, and returns the
// half-open generation and the transition (zero when none). b.mu is held.
func (b *Breaker) halfOpenLocked(word uint64) (uint64, Transition) {
	gen := word >> 2
	if State(word&3) != Open {
		return gen, Transition{}
	}
	gen++
	b.successes = 0
	b.word.Store(gen<<2 | uint64(HalfOpen))
	return gen, Transition{Name: b.cfg.Name, From: Open, To: HalfOpen, Reason: "open interval elapsed", Generation: gen}
}

// probeOutcome acts on the outcome err of a probe of half-open generation
// gen started at start, by portico.FaultOf as a closed call's but that an
// unanswered probe failed. A probe ended by the caller's own OnChunk (a
// panic or an error), or any outcome not counted, only frees its slot.
func (b *Breaker) probeOutcome(ctx context.Context, gen uint64, start time.Duration, err error) {
	f, class := portico.FaultOf(err)
	failed := f == portico.FaultRoute || f == portico.FaultUnanswered
	now := mono.Now()
	if failed {
		b.announce(now, err)
	}
	slow := b.slow(start, now)
	b.mu.Lock()
	// The slot is released whatever happened meanwhile: probes counts every
	// probe still running, even one of an earlier half-open period, so that no
	// more than Probes ever run at once.
	b.probes.Add(-1)
	var tr Transition
	if b.word.Load() == gen<<2|uint64(HalfOpen) && counted(f) {
		tr = b.probedLocked(gen, now, failed, slow, class)
	}
	b.mu.Unlock()
	if tr.Generation != 0 {
		b.notify(ctx, tr)
	}
}

// probedLocked acts on a counted probe of half-open generation gen: one
// failed or slow reopens the breaker, Config.Probes successful ones close
// it with an empty window. It returns the transition, zero when none. b.mu
// is held.
func (b *Breaker) probedLocked(gen uint64, now time.Duration, failed, slow bool, class portico.Class) Transition {
	switch {
	case failed:
		return b.openLocked(gen, now, HalfOpen, "probe failed", class)
	case slow:
		return b.openLocked(gen, now, HalfOpen, "probe slow", class)
	}
	if b.successes++; b.successes < b.cfg.Probes {
		return Transition{}
	}
	if b.count != nil {
		b.count.Reset()
	}
	b.word.Store((gen+1)<<2 | uint64(Closed))
	return Transition{Name: b.cfg.Name, From: HalfOpen, To: Closed, Reason: "probes succeeded", Generation: gen + 1}
}
