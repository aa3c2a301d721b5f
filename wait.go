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
