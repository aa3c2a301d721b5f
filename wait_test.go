package portico

import (
	"context"
	"testing"
	"time"
)

// A MaxWait travels in the context, the innermost applying, negative taken
// as 0; the context's other values, deadline and cancellation pass through.
func TestContextWithMaxWait(t *testing.T) {
	if d, ok := MaxWaitFromContext(context.Background()); ok || d != 0 {
		t.Errorf("MaxWaitFromContext(Background) = %v, %v; want 0, false", d, ok)
	}
	parent, cancel := context.WithTimeout(ContextWithAttempt(context.Background(), Attempt{Index: 2}), time.Hour)
	ctx := ContextWithMaxWait(parent, 500*time.Millisecond)
	if d, ok := MaxWaitFromContext(ctx); !ok || d != 500*time.Millisecond {
		t.Errorf("MaxWaitFromContext = %v, %v; want 500ms, true", d, ok)
	}
	if d, ok := MaxWaitFromContext(ContextWithMaxWait(ctx, -time.Second)); !ok || d != 0 {
		t.Errorf("inner negative: MaxWaitFromContext = %v, %v; want 0, true", d, ok)
	}
	if AttemptFromContext(ctx).Index != 2 {
		t.Errorf("AttemptFromContext through it = %+v, want index 2", AttemptFromContext(ctx))
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) <= 59*time.Minute {
		t.Errorf("Deadline through it = %v, %v; want the parent's", dl, ok)
	}
	cancel()
	<-ctx.Done()
	if ctx.Err() != context.Canceled {
		t.Errorf("Err after the parent's cancel = %v, want canceled", ctx.Err())
	}
	if n := testing.AllocsPerRun(100, func() { ctxSink = ContextWithMaxWait(parent, time.Second) }); n != 1 {
		t.Errorf("ContextWithMaxWait allocs = %v, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { MaxWaitFromContext(ctx) }); n != 0 {
		t.Errorf("MaxWaitFromContext allocs = %v, want 0", n)
	}
}

var ctxSink context.Context
