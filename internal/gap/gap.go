// Package gap bounds the gaps between a stream's signs of progress (its
// chunks, and the chunks an inner layer holds back and reports with
// portico.Progress): a [Bound] cuts the stream, canceling its context with
// a cause, when the next sign is late, and stops its clock while the
// caller's OnChunk holds a chunk, since a slow consumer's time is not the
// producer's gap. Package retry bounds an attempt's first chunk and its
// gaps with one (its rate floor cuts through it too); package fallback a
// candidate's gaps within its share.
package gap

import (
	"cmp"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico/internal/mono"
)

// Limits are a [Bound]'s bounds and the cause of each cut, the columns in
// which layers differ: retry bounds the first chunk and the gaps apart,
// each with its sentinel, and refuses a chunk after the attempt returned
// (Late); fallback bounds both by a candidate's share, with the share's
// cause, and lets a late chunk pass. A zero duration bounds nothing.
type Limits struct {
	First      time.Duration // from Start to the first sign
	Gap        time.Duration // from each sign, or the return of a hold, to the next
	FirstCause error         // cancels the stream when First runs out
	GapCause   error         // cancels the stream when Gap runs out
	Late       error         // a sign after Settle returns it; nil lets it pass
}

// Bound watches one stream, from Start to Settle. Its clock reads the
// monotonic time; a sign before a bound runs out re-arms it (one timer,
// time.AfterFunc). Its zero value is ready and cuts nothing until Start.
// It is safe for concurrent use: signs come from the goroutine that
// streams, the cut from the timer's, Settle from the caller's. A sign and
// a release cost an atomic load and a store (and Release one clock read);
// the mutex orders only Start, the timer's fire, Cut and Settle.
type Bound struct {
	mu     sync.Mutex
	l      Limits
	cancel context.CancelCauseFunc
	timer  *time.Timer // nil when neither First nor Gap bounds; set by Start
	state  atomic.Int32
	last   atomic.Int64 // mono.Now of the latest sign (ns), or held
	cause  error        // the cut's; written under mu before state is cut
}

// The states of a Bound.
const (
	waiting int32 = iota // no sign yet
	flowing              // signs came; last is the latest, or held
	cut                  // a bound ran out, or Cut
	settled              // Settle came first
)

// held is Bound.last while the caller's OnChunk holds a chunk, and until
// the first sign: the gap's clock is stopped.
const held = math.MinInt64

// Start arms b with l; a cut calls cancel with its cause. It is called
// once, before the stream's first sign.
func (b *Bound) Start(cancel context.CancelCauseFunc, l Limits) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.l, b.cancel = l, cancel
	b.last.Store(held)
	if l.First > 0 || l.Gap > 0 {
		b.timer = time.AfterFunc(cmp.Or(l.First, math.MaxInt64), b.fire) // MaxInt64: armed by the first sign
	}
}

// Sign records a sign of progress, and with hold stops the clock until
// Release. first reports the stream's first sign. err is the cause of
// the cut once b cut the stream, and Limits.Late after Settle.
func (b *Bound) Sign(hold bool) (first bool, err error) {
	st := b.state.Load()
	if st == waiting {
		first = b.state.CompareAndSwap(waiting, flowing)
		st = b.state.Load()
	}
	switch st {
	case flowing:
	case cut:
		return false, b.cause
	default:
		return false, b.l.Late
	}
	if first && b.timer != nil { // the timer finds last held until stamped below
		b.timer.Reset(cmp.Or(b.l.Gap, math.MaxInt64)) // MaxInt64: no gap bound
	}
	if b.l.Gap > 0 {
		if hold {
			b.last.Store(held)
		} else {
			b.last.Store(int64(mono.Now()))
		}
	}
	return first, nil
}

// Release restarts the clock a Sign with hold stopped, from now.
func (b *Bound) Release() {
	if b.l.Gap > 0 {
		b.last.Store(int64(mono.Now()))
	}
}

// Cut cuts the stream with cause and reports whether it did: false once
// b cut it or settled.
func (b *Bound) Cut(cause error) bool {
	b.mu.Lock()
	ok := false
	for st := b.state.Load(); st < cut && !ok; st = b.state.Load() {
		ok = b.end(st, cause)
	}
	b.mu.Unlock()
	if ok {
		b.cancel(cause)
	}
	return ok
}

// Ended reports whether b cut the stream or settled.
func (b *Bound) Ended() bool { return b.state.Load() >= cut }

// Settle ends b when the stream returned and returns the cause of its
// cut, nil when it did not cut; it may be called again.
func (b *Bound) Settle() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer != nil {
		b.timer.Stop()
	}
	for {
		switch st := b.state.Load(); st {
		case cut:
			return b.cause
		case settled:
			return nil
		default:
			if b.state.CompareAndSwap(st, settled) {
				return nil
			}
		}
	}
}

// fire cuts the stream when the bound of its state ran out, and re-arms
// the timer for what is left of it otherwise (all of Gap while the
// caller's OnChunk holds a chunk).
func (b *Bound) fire() {
	b.mu.Lock()
	ok, cause := false, b.l.GapCause
	switch st := b.state.Load(); {
	case st == waiting && b.l.First > 0:
		cause = b.l.FirstCause
		ok = b.end(waiting, cause) // false: the first sign came meanwhile
	case st == flowing && b.l.Gap > 0:
		left := b.l.Gap
		if last := b.last.Load(); last != held {
			left -= mono.Now() - time.Duration(last)
		}
		if left > 0 {
			b.timer.Reset(left)
		} else {
			ok = b.end(flowing, cause)
		}
	}
	b.mu.Unlock()
	if ok {
		b.cancel(cause)
	}
}

// end moves b from state from to cut with cause and reports whether it
// did: false when a first sign moved it meanwhile. b.mu is held, so no
// other end or Settle races it.
func (b *Bound) end(from int32, cause error) bool {
	b.cause = cause // read only once the state is cut
	return b.state.CompareAndSwap(from, cut)
}
