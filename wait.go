package portico

import (
	"context"
	"time"
)

type maxWaitKey struct{}

// maxWaitCtx carries a wait: one allocation, where context.WithValue would
// take a second to box the Duration.
type maxWaitCtx struct {
	context.Context
	d time.Duration
}

func (c *maxWaitCtx) Value(key any) any {
	if key == (maxWaitKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// ContextWithMaxWait returns a copy of ctx that carries d, the longest wait
// in place worth taking before the call fails: a routing layer that has
// another route for the request (package fallback) prefers that a route
// told to come back later fail at once, so that it moves on, over a wait
// longer than d. A layer that would wait for a route's Retry-After (package
// retry) honours it: it ends the call at once, with the error that carries
// the hint, when the hint is longer than d. The innermost value applies; a
// negative d is taken as 0. It costs one allocation.
func ContextWithMaxWait(ctx context.Context, d time.Duration) context.Context {
	return &maxWaitCtx{Context: ctx, d: max(d, 0)}
}

// MaxWaitFromContext returns the wait ctx carries (see [ContextWithMaxWait])
// and true, or 0 and false when it carries none: no limit but the deadline.
func MaxWaitFromContext(ctx context.Context) (time.Duration, bool) {
	if c, ok := ctx.Value(maxWaitKey{}).(*maxWaitCtx); ok {
		return c.d, true
	}
	return 0, false
}

type cooldownKey struct{}

// cooldownCtx carries a cooldown's reading: one allocation.
type cooldownCtx struct {
	context.Context
	until func() time.Time
}

func (c *cooldownCtx) Value(key any) any {
	if key == (cooldownKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// ContextWithCooldown returns a copy of ctx that carries until, which says
// until when the route about to be called is cooling down (package
// fallback's Cooldowns, perhaps shared by the instances of a service): the
// zero Time, or one not after now, when it is not. A layer that would call
// the route again (package retry) reads it before each retry and after its
// wait, and takes a cooldown that ends later as a Retry-After the route
// announced: it waits for it where it would wait for that hint (within
// [MaxWaitFromContext] and the deadline), and otherwise ends the call at
// once with the error that carries it. until must be safe for concurrent
// use and quick. The innermost value applies. It costs one allocation.
func ContextWithCooldown(ctx context.Context, until func() time.Time) context.Context {
	return &cooldownCtx{Context: ctx, until: until}
}

// CooldownFromContext returns how long from now the route ctx's call goes to
// is still cooling down (see [ContextWithCooldown]), 0 when it is not or ctx
// carries no cooldown.
func CooldownFromContext(ctx context.Context) time.Duration {
	c, ok := ctx.Value(cooldownKey{}).(*cooldownCtx)
	if !ok {
		return 0
	}
	until := c.until()
	if until.IsZero() {
		return 0
	}
	return max(time.Until(until), 0)
}
