package lazyctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The bits of a Cancelable's flags: set once each, never cleared.
const (
	cancelDone    uint32 = 1 << iota // Cancel was called
	cancelDerived                    // ctx and cancel hold the standard context
)

// Cancelable is a context.Context that its Cancel ends with a cause, as
// context.WithCancelCause's cancel function does, made by [WithCancel]. It
// derives that standard context only when something waits on Done (or
// looks up the cause once it ended), so one that nothing waits on costs its
// one allocation of 32 bytes and no registration with its parent. It is
// safe for concurrent use, and never reused: a goroutine may hold it after
// Cancel.
//
// It differs from the standard one in one respect, which no caller inside
// the call can see: Cancel after the parent ended while nothing was derived
// ends it as canceled with Cancel's cause, where the standard one reports
// the parent's end because it saw it first.
type Cancelable struct {
	parent context.Context
	flags  atomic.Uint32
	slow   atomic.Pointer[cancelSlow] // made by a Cancel with a cause, or deriving
}

// cancelSlow is what a Cancelable needs only once it derives the standard
// context or keeps a cause.
type cancelSlow struct {
	mu    sync.Mutex // serialises deriving and a Cancel with a cause
	cause error      // Cancel's cause; guarded by mu
	// Set under mu before the cancelDerived bit, read after it.
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// WithCancel returns a Cancelable child of parent.
func WithCancel(parent context.Context) *Cancelable { return &Cancelable{parent: parent} }

// slowPart returns c's slow part, making it if needed.
func (c *Cancelable) slowPart() *cancelSlow {
	if sp := c.slow.Load(); sp != nil {
		return sp
	}
	c.slow.CompareAndSwap(nil, new(cancelSlow))
	return c.slow.Load()
}

// Cancel ends c with cause (nil means context.Canceled) unless it has ended
// already, and frees what a derived context holds. Safe to call more than
// once, and on a nil *Cancelable.
func (c *Cancelable) Cancel(cause error) {
	if c == nil {
		return
	}
	if cause == nil && c.flags.CompareAndSwap(0, cancelDone) {
		return // the happy path: nothing derived, no cause to keep
	}
	if c.flags.Load()&cancelDone != 0 {
		return
	}
	sp := c.slowPart()
	sp.mu.Lock()
	f := c.flags.Load()
	switch {
	case f&cancelDone != 0:
		sp.mu.Unlock()
		return
	case f == 0:
		// Only the happy path's CAS can change f meanwhile, and then it
		// ended c first, without a cause.
		sp.cause = cause
		if !c.flags.CompareAndSwap(0, cancelDone) {
			sp.cause = nil
		}
		sp.mu.Unlock()
		return
	}
	sp.cause = cause
	c.flags.Store(cancelDerived | cancelDone) // f is cancelDerived: nothing else writes it now
	sp.mu.Unlock()
	sp.cancel(cause)
}

// derived returns the standard context c delegates to, deriving it the
// first time: from parent while c is live, or one already ended as c has.
func (c *Cancelable) derived() context.Context {
	if c.flags.Load()&cancelDerived != 0 {
		return c.slow.Load().ctx
	}
	sp := c.slowPart()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	f := c.flags.Load()
	if f&cancelDerived != 0 {
		return sp.ctx
	}
	if f == 0 {
		sp.ctx, sp.cancel = context.WithCancelCause(c.parent)
		if c.flags.CompareAndSwap(0, cancelDerived) {
			return sp.ctx
		}
		// Canceled by the happy path meanwhile, without a cause.
	} else {
		sp.ctx, sp.cancel = context.WithCancelCause(context.WithoutCancel(c.parent))
	}
	sp.cancel(sp.cause)
	c.flags.Store(cancelDerived | cancelDone)
	return sp.ctx
}

// Deadline returns parent's deadline.
func (c *Cancelable) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done returns a channel closed when c ends. Its first call derives the
// standard context.
func (c *Cancelable) Done() <-chan struct{} { return c.derived().Done() }

// Err returns nil while c is live, context.Canceled once canceled, the
// parent's error once the parent ended, whichever came first as far as it
// was seen.
func (c *Cancelable) Err() error {
	f := c.flags.Load()
	switch {
	case f&cancelDerived != 0:
		return c.slow.Load().ctx.Err()
	case f&cancelDone != 0:
		return context.Canceled
	}
	return c.parent.Err()
}

// Value returns parent's value for key. Once c was canceled, the lookup of
// a *int key (the context package's, which context.Cause makes) derives
// the standard context, so that Cause returns Cancel's cause.
func (c *Cancelable) Value(key any) any {
	f := c.flags.Load()
	if f&cancelDerived != 0 {
		return c.slow.Load().ctx.Value(key)
	}
	if _, ok := key.(*int); ok && f&cancelDone != 0 {
		return c.derived().Value(key)
	}
	return c.parent.Value(key)
}

// String describes c as the context package's contexts do.
func (c *Cancelable) String() string { return "lazyctx.WithCancel" }
