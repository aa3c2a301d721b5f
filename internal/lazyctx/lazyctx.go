// Package lazyctx derives a context with an earlier deadline that costs no
// timer, goroutine or cancel registration until something waits on it.
//
// context.WithDeadline arms a timer and registers the child with its parent
// at once, about half a microsecond and four allocations, though on the happy
// path of an LLM call nothing below the layer that set the deadline waits on
// it before the answer comes back. A [Context] is one allocation, which has
// room for the first Context derived from it too. Its deadline is kept as a
// reading of the monotonic clock, so that making one, and [Left], read that
// clock alone; Err compares the deadline with the clock. Only a first call to
// Done, or the lookup context.Cause makes once the context has ended,
// derives the standard context (WithDeadlineCause) that it then delegates
// to. A Context derived from another that never materialized is
// materialized from that one's parent, with the earlier deadline, and is
// canceled with it: a request through several layers that each set a
// deadline arms one timer, not one per layer. A [Cancelable] is the same
// for a context canceled with a cause, context.WithCancelCause's. [Entry]
// makes the Context of a request entering a chain of layers and lends the
// one reading of the clock it made to the layers next in line ([Now],
// [Stale]).
package lazyctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/portico-llm/portico/internal/mono"
)

// now reads the package's clock, [mono.Now]: the monotonic clock alone.
func now() time.Duration { return mono.Now() }

// The states of a Context, in the low bits of its flags. It leaves live
// once, for materialized (a standard context derived, which decides from
// then on), or for canceled or expired, the first end observed while
// nothing was derived.
const (
	live uint32 = iota
	materialized
	canceled
	expired

	stateMask uint32 = 3
	adopted   uint32 = 1 << 2 // a kid was adopted (see adopt): Cancel must look
	spareUsed uint32 = 1 << 3 // the spare was given out (see bound)
)

// Context is a context.Context whose deadline is earlier than its parent's,
// and whose cause is its Kind's once that deadline passes (nil means
// context.DeadlineExceeded), like context.WithDeadlineCause's. It is safe for
// concurrent use. Cancel ends it; a nil *Context's Cancel does nothing.
//
// It differs from the standard one in one respect, which no caller inside
// the call can see: Cancel after a deadline that nobody observed (no Err,
// Done or Cause call found it passed) ends the context as canceled, where
// the standard one reports the deadline because its timer fired first.
type Context struct {
	parent context.Context
	kind   *Kind         // its cause and values; nil for none
	at     time.Duration // the deadline, on the package's clock (see now)
	flags  atomic.Uint32 // the state and the adopted and spareUsed bits
	fresh  bool          // Entry's reading is lent (see Now); the spare is free and holds it
	mirror bool          // parent's deadline is at: c ends with parent, as parent (see Entry)
	paired bool          // c is a pair's first: room for one child follows it (see room)
	slow   atomic.Pointer[slow]
}

// Kind is what the Contexts made in one place share, made once (a package
// variable, a field of a long-lived value) so that it costs no allocation
// per Context: the cause of their end once the deadline passed (nil means
// context.DeadlineExceeded), and a context of values alone made over
// context.Background() (such as portico.ContextWithMaxWait's), whose values
// shadow the parent's as if it wrapped the Context (nil for none).
type Kind struct {
	Cause  error
	Values context.Context
}

// cause is c's cause once its deadline passed.
func (c *Context) cause() error {
	if c.kind == nil {
		return nil
	}
	return c.kind.Cause
}

// values is c's context of values, or nil.
func (c *Context) values() context.Context {
	if c.kind == nil {
		return nil
	}
	return c.kind.Values
}

// slow is what a Context needs only once something waits on it or on a
// Context derived from it.
type slow struct {
	mu   sync.Mutex // serialises materialize and adopt, and guards kids
	real atomic.Pointer[derived]
	kids *Context // contexts materialized from parent on this one's behalf, linked by next
	next *Context // the next of the parent's kids, when this one is one
}

// pair is what a new Context takes: it and the room for the first Context
// derived from it (a fallback candidate's share under a request's deadline),
// so that a request that sets two deadlines allocates once, 96 bytes. Until
// the room is taken, its at holds Entry's reading of the clock (see Now).
type pair struct{ c, spare Context }

// room returns the room for a child that follows c in its pair: c must be
// paired. The pair is one allocation and c its first field, so c's address
// is the pair's.
func (c *Context) room() *Context { return &(*pair)(unsafe.Pointer(c)).spare }

// derived is the standard context a Context delegates to once materialized.
type derived struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (c *Context) state() uint32 { return c.flags.Load() & stateMask }

// leave moves c from live to s, keeping the bits, and reports whether it
// did (false: c had left live already).
func (c *Context) leave(s uint32) bool {
	for {
		f := c.flags.Load()
		if f&stateMask != live {
			return false
		}
		if c.flags.CompareAndSwap(f, f&^stateMask|s) {
			return true
		}
	}
}

// slowPart returns c's slow part, making it if needed.
func (c *Context) slowPart() *slow {
	if sp := c.slow.Load(); sp != nil {
		return sp
	}
	c.slow.CompareAndSwap(nil, new(slow))
	return c.slow.Load()
}

// derivedCtx returns the standard context c delegates to, or nil.
func (c *Context) derivedCtx() context.Context {
	if sp := c.slow.Load(); sp != nil {
		if r := sp.real.Load(); r != nil {
			return r.ctx
		}
	}
	return nil
}

// WithTimeout returns parent bounded by a deadline d from now, with k's
// cause and values (nil: none), and the *Context to Cancel when the work is
// done. When parent's own deadline is not later it derives nothing: it
// returns parent and a nil *Context.
func WithTimeout(parent context.Context, d time.Duration, k *Kind) (context.Context, *Context) {
	return bound(parent, mono.Add(now(), d), k)
}

// WithDeadline is WithTimeout with the deadline at.
func WithDeadline(parent context.Context, at time.Time, k *Kind) (context.Context, *Context) {
	return bound(parent, mono.Of(at), k)
}

// WithEarlier is WithTimeout with a deadline by before parent's own, which
// parent must have; by <= 0 derives nothing. It reads no clock when parent
// is a Context.
func WithEarlier(parent context.Context, by time.Duration, k *Kind) (context.Context, *Context) {
	if by <= 0 {
		return parent, nil
	}
	var at time.Duration
	if p, ok := parent.(*Context); ok {
		at = mono.Sub(p.at, by)
	} else if d, ok := parent.Deadline(); ok {
		at = mono.Sub(mono.Of(d), by)
	} else {
		panic("lazyctx: WithEarlier of a context without a deadline")
	}
	return bound(parent, at, k)
}

// Entry bounds a request entering a chain of layers: by d from now (d <= 0
// means no bound of its own) and by parent's deadline, whichever is earlier.
// With neither it returns parent and a nil *Context, reading no clock.
// Otherwise it returns a Context even when parent's deadline is the earlier:
// that one ends with parent, with parent's error and cause, and serves to
// lend the layers next in line the one reading of the clock Entry made (see
// [Now]) and the room for one child.
func Entry(parent context.Context, d time.Duration) (context.Context, *Context) {
	var pat time.Duration
	has := true
	if p, ok := parent.(*Context); ok {
		pat = p.at
	} else if dl, ok := parent.Deadline(); ok {
		pat = mono.Of(dl)
	} else {
		has = false
	}
	if !has && d <= 0 {
		return parent, nil
	}
	t := now()
	at := mono.Add(t, d)
	pr := &pair{c: Context{parent: parent, at: at, fresh: true, paired: true}, spare: Context{at: t}}
	if has && (d <= 0 || pat <= at) {
		pr.c.at, pr.c.mirror = pat, true
	}
	return &pr.c, &pr.c
}

// Now returns a reading of the package's clock for a layer of the call
// under ctx: Entry's, when ctx is a Context Entry made and no layer has
// called [Stale] on it since; else a new one. Only the layers that Entry's
// caller calls directly, which know that nothing before them waited, may
// use it; [Stale] ends the loan.
func Now(ctx context.Context) time.Duration {
	if t, ok := Lent(ctx); ok {
		return t
	}
	return now()
}

// Lent returns Entry's reading and true while ctx lends it (see [Now]),
// else false: Now without the clock read, small enough to inline where a
// layer has a clock of its own.
func Lent(ctx context.Context) (time.Duration, bool) {
	if c, ok := ctx.(*Context); ok && c.fresh {
		return c.room().at, true
	}
	return 0, false
}

// Stale ends the loan of Entry's reading (see [Now]): a layer calls it
// before it waits, or calls code that may wait, with ctx, and before ctx
// can reach another goroutine. It does nothing for any other context.
func Stale(ctx context.Context) {
	if c, ok := ctx.(*Context); ok && c.fresh {
		c.fresh = false
	}
}

// Left returns the time left before ctx's deadline and whether it has one,
// as time.Until(ctx.Deadline()) does, with no more than one read of the
// monotonic clock when ctx is a Context, and none while it lends Entry's
// reading (see [Now]).
func Left(ctx context.Context) (time.Duration, bool) {
	if c, ok := ctx.(*Context); ok {
		return mono.Sub(c.at, Now(c)), true
	}
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(d), true
}

// At returns ctx's deadline as a reading of [mono.Now] and whether it has
// one, with no clock read when ctx is a Context.
func At(ctx context.Context) (time.Duration, bool) {
	if c, ok := ctx.(*Context); ok {
		return c.at, true
	}
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return mono.Of(d), true
}

// bound is the constructor of the With functions, with the deadline at on
// the package's clock.
func bound(parent context.Context, at time.Duration, k *Kind) (context.Context, *Context) {
	if p, ok := parent.(*Context); ok {
		if at >= p.at {
			return parent, nil
		}
	} else if d, ok := parent.Deadline(); ok && at >= mono.Of(d) {
		return parent, nil
	}
	if p, ok := parent.(*Context); ok && p.paired && p.takeSpare() {
		if p.fresh {
			p.fresh = false // the room held the reading: the loan ends
		}
		c := p.room() // never reused: a goroutine may hold it after Cancel
		c.parent, c.at, c.kind = parent, at, k
		return c, c
	}
	pr := &pair{c: Context{parent: parent, at: at, kind: k, paired: true}}
	return &pr.c, &pr.c
}

// takeSpare reports whether the spare was free, and marks it taken.
func (c *Context) takeSpare() bool {
	for {
		f := c.flags.Load()
		if f&spareUsed != 0 {
			return false
		}
		if c.flags.CompareAndSwap(f, f|spareUsed) {
			return true
		}
	}
}

// base is a reading of time.Now, less than a second old when last used, to
// turn the package's clock into times (see Deadline).
var base atomic.Pointer[reading]

type reading struct {
	t   time.Time
	off time.Duration // t on the package's clock
}

// Deadline returns the deadline. Its monotonic reading, which deadlines are
// compared and measured with, is the same at every call; its wall-clock
// reading follows a step of the system clock within a second. Inside a
// synctest bubble it is the bubble's time, without a monotonic reading, as
// the bubble's time.Now.
func (c *Context) Deadline() (time.Time, bool) {
	if c.mirror {
		return c.parent.Deadline()
	}
	b := base.Load()
	if b == nil {
		b = &reading{}
	}
	if age := time.Since(b.t); age < 0 || age >= time.Second {
		t := time.Now()
		b = &reading{t: t, off: mono.Of(t)}
		base.Store(b)
	}
	return b.t.Add(mono.Sub(c.at, b.off)), true
}

// Err returns nil while the Context is live; context.DeadlineExceeded once
// its deadline has passed, context.Canceled once canceled, the parent's
// error once the parent ended, whichever came first as far as it was seen.
func (c *Context) Err() error {
	if c.mirror {
		return c.parent.Err()
	}
	switch c.state() {
	case live:
		// The parent's deadline is not earlier than c's: when it has passed,
		// c's passed first. A parent canceled is reported as such.
		err := c.parent.Err()
		if err != nil && err != context.DeadlineExceeded {
			return err
		}
		if err == nil && now() < c.at {
			return nil
		}
		if c.leave(expired) {
			return context.DeadlineExceeded
		}
		return c.Err() // materialized or canceled meanwhile
	case canceled:
		return context.Canceled
	case expired:
		return context.DeadlineExceeded
	}
	return c.materialize().Err()
}

// Done returns a channel closed when the Context ends. Its first call
// materializes the Context, unless it ends with its parent (see Entry).
func (c *Context) Done() <-chan struct{} {
	if c.mirror {
		return c.parent.Done()
	}
	return c.materialize().Done()
}

// Value returns the value for key of its Kind's Values, else
// the parent's. Once the Context has ended by
// its own deadline or Cancel, the lookup of a *int key (the context
// package's, which context.Cause makes) materializes it, so that Cause
// returns its cause.
func (c *Context) Value(key any) any {
	for {
		if vs := c.values(); vs != nil {
			if v := vs.Value(key); v != nil {
				return v
			}
		}
		if !c.mirror {
			if r := c.derivedCtx(); r != nil {
				return r.Value(key)
			}
			if _, ok := key.(*int); ok && c.Err() != nil && c.state() != live {
				return c.materialize().Value(key)
			}
		}
		// A parent that is a Context is asked in the loop, not through
		// the interface: a lookup that misses walks each level of a
		// request's chain of Contexts.
		p, ok := c.parent.(*Context)
		if !ok {
			return c.parent.Value(key)
		}
		c = p
	}
}

// String describes the Context as the context package's contexts do.
func (c *Context) String() string {
	d, _ := c.Deadline()
	return "lazyctx.WithDeadline(" + d.String() + " [" + time.Until(d).String() + "])"
}

// Cancel ends the Context, and those materialized on its behalf, and frees
// what a materialized one holds (its timer, its registration with its
// parent). Call it when the work under the Context is done. Safe to call
// more than once, and on a nil *Context.
func (c *Context) Cancel() {
	if c == nil {
		return
	}
	if c.leave(canceled) && c.flags.Load()&adopted == 0 {
		return // the happy path: nothing was materialized, here or below
	}
	sp := c.slow.Load()
	if sp == nil {
		return
	}
	sp.mu.Lock()
	r, kids := sp.real.Load(), sp.kids
	sp.kids = nil
	sp.mu.Unlock()
	if r != nil {
		r.cancel()
	}
	for k := kids; k != nil; {
		next := k.slow.Load().next
		k.Cancel()
		k = next
	}
}

// materialize returns the standard context c delegates to, deriving it the
// first time: from parent with c's deadline and cause while c is live (from
// parent's parent when parent is a live Context that never materialized:
// see adopt), or one that has already ended as c has.
func (c *Context) materialize() context.Context {
	if r := c.derivedCtx(); r != nil {
		return r
	}
	sp := c.slowPart()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if r := sp.real.Load(); r != nil {
		return r.ctx
	}
	at, _ := c.Deadline()
	var r derived
	switch {
	case c.leave(materialized):
		base := c.parent
		if p, ok := base.(*Context); ok && p.adopt(c, sp) {
			base = p.parent
		}
		r.ctx, r.cancel = context.WithDeadlineCause(base, at, c.cause())
	case c.state() == expired:
		r.ctx, r.cancel = context.WithDeadlineCause(context.WithoutCancel(c.parent), at, c.cause())
	default: // canceled
		r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(c.parent))
		r.cancel()
	}
	sp.real.Store(&r)
	return r.ctx
}

// adopt records kid, whose slow part is ksp, about to be materialized with
// a deadline no later than c's, so that c's Cancel cancels it, and reports
// whether it did: only while c is live and not materialized, when kid may
// derive from c's parent instead of materializing c (c's deadline, later
// than kid's, cannot end kid first), and when c has no values of its own.
// The caller holds ksp.mu.
func (c *Context) adopt(kid *Context, ksp *slow) bool {
	if kid.at > c.at || c.values() != nil { // kid would not see c's values
		return false
	}
	sp := c.slowPart()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	// The bit is set with the state still live, under sp.mu: a Cancel that
	// sees it takes sp.mu and so finds kid, and one that left live first
	// makes this fail.
	for {
		f := c.flags.Load()
		if f&stateMask != live {
			return false
		}
		if c.flags.CompareAndSwap(f, f|adopted) {
			break
		}
	}
	ksp.next, sp.kids = sp.kids, kid
	return true
}
