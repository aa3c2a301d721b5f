package lazyctx

import (
	"context"
	"time"
)

// Ended reports whether ctx has ended, as ctx.Err() != nil does, reading
// the clock at most once: not at all while ctx lends Entry's reading (see
// [Now]) or has no Context in its chain, where Err reads it once per
// Context of the chain. A layer asks it on entry, so that a request whose
// caller has gone spends nothing.
func Ended(ctx context.Context) bool {
	if c, ok := ctx.(*Context); ok && c.fresh {
		return endedAt(ctx, c.room().at, true)
	}
	return endedAt(ctx, 0, false)
}

// EndedAt is [Ended] as of t, a reading of mono.Now no later than the
// present that the caller made already: it reads no clock.
func EndedAt(ctx context.Context, t time.Duration) bool { return endedAt(ctx, t, true) }

// endedAt walks ctx's chain of Contexts and Cancelables to the first other
// context, which Err decides; t is the reading to compare deadlines with,
// made at the first deadline met unless read is true.
func endedAt(ctx context.Context, t time.Duration, read bool) bool {
	for {
		switch c := ctx.(type) {
		case *Context:
			if !read {
				t, read = now(), true
			}
			if t >= c.at {
				return true
			}
			if !c.mirror { // a mirror ends with its parent, as its parent (see Err)
				switch c.state() {
				case canceled, expired:
					return true
				case materialized:
					return c.materialize().Err() != nil
				}
			}
			ctx = c.parent
		case *Cancelable:
			f := c.flags.Load()
			switch {
			case f&cancelDerived != 0:
				return c.slow.Load().ctx.Err() != nil
			case f&cancelDone != 0:
				return true
			}
			ctx = c.parent
		default:
			return ctx.Err() != nil
		}
	}
}
