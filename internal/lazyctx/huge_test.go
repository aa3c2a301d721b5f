package lazyctx

import (
	"context"
	"math"
	"testing"
	"time"
)

// A bound of any length means what it says: math.MaxInt64 from now is a
// deadline centuries away, not one in the past because now + d wrapped
// around. Outside a synctest bubble, whose clock reads before mono's
// origin and hides the overflow.
func TestHugeBound(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), math.MaxInt64)
	defer cancel()
	for _, c := range []struct {
		name string
		make func() (context.Context, *Context)
	}{
		{"Entry", func() (context.Context, *Context) { return Entry(context.Background(), math.MaxInt64) }},
		{"Entry under a huge parent", func() (context.Context, *Context) { return Entry(parent, math.MaxInt64) }},
		{"WithTimeout", func() (context.Context, *Context) { return WithTimeout(context.Background(), math.MaxInt64, nil) }},
		{"WithEarlier", func() (context.Context, *Context) { return WithEarlier(parent, time.Hour, nil) }},
	} {
		ctx, lc := c.make()
		if err := ctx.Err(); err != nil {
			t.Errorf("%s: Err = %v, want nil", c.name, err)
		}
		if left, ok := Left(ctx); !ok || left < 100*365*24*time.Hour {
			t.Errorf("%s: Left = %v, %v, want over a century", c.name, left, ok)
		}
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < 100*365*24*time.Hour {
			t.Errorf("%s: Deadline = %v, %v, want over a century away", c.name, dl, ok)
		}
		lc.Cancel()
	}
}
