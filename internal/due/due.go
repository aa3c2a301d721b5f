// Package due carries a request's deadline down a chain of layers as a
// value of its context, without a context of its own: no timer, no
// cancelation to propagate, one allocation. The stack's end-to-end
// deadline travels so to its fallback group, which derives each
// candidate's one context from the caller's with the earlier of the
// candidate's share and this deadline (package context's
// WithDeadline), instead of a share nested under a deadline context.
//
// The rule for every layer between the one that sets it and the one that
// enforces it: a layer that reads the deadline reads [Deadline] (the
// earlier of ctx's own and the carried one), and a layer that blocks
// (waits for admission, a timer, I/O) first calls [Bound], so that its
// wait ends at the carried deadline as it would under a deadline context.
package due

import (
	"context"
	"time"
)

// carried is a context carrying the deadline at; it shadows a deadline
// carried further up.
type carried struct {
	context.Context
	at time.Time
}

type key struct{}

func (c *carried) Value(k any) any {
	if k == (key{}) {
		return c
	}
	return c.Context.Value(k)
}

// With returns ctx carrying the deadline at, which nothing enforces until
// a layer derives a context from it ([Bound]); ctx's Done, Err and
// Deadline are unchanged.
func With(ctx context.Context, at time.Time) context.Context {
	return &carried{ctx, at}
}

// Of returns the deadline ctx carries ([With]), and false when it carries
// none or its own deadline is not later (ctx enforces it already).
func Of(ctx context.Context) (time.Time, bool) {
	c, ok := ctx.Value(key{}).(*carried)
	if !ok {
		return time.Time{}, false
	}
	if dl, ok := ctx.Deadline(); ok && !dl.After(c.at) {
		return time.Time{}, false
	}
	return c.at, true
}

// Deadline returns the earlier of ctx's deadline and the one it carries,
// and false when it has neither: what ctx.Deadline would return had the
// carried deadline been a context's.
func Deadline(ctx context.Context) (time.Time, bool) {
	if at, ok := Of(ctx); ok {
		return at, true
	}
	return ctx.Deadline()
}

// Bound returns ctx bounded by the deadline it carries, when that is
// earlier than its own (context.WithDeadline), with the func that
// releases it; else ctx and a no-op. A layer about to block calls it.
func Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if at, ok := Of(ctx); ok {
		return context.WithDeadline(ctx, at)
	}
	return ctx, func() {}
}

// Err returns ctx's error, or context.DeadlineExceeded once the deadline
// ctx carries passed, reading the clock only when ctx carries one.
func Err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if at, ok := Of(ctx); ok && !time.Now().Before(at) {
		return context.DeadlineExceeded
	}
	return nil
}
