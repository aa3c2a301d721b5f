package due

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCarried: a carried deadline is read by Of and Deadline while it is
// earlier than the context's own, enforced by nothing (Done, Err and
// Deadline unchanged) until Bound derives a context that ends at it
// exactly; Err reports it passed without a context. The innermost carried
// deadline shadows one further up, and a context's own earlier deadline
// wins over both.
func TestCarried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		at := start.Add(2 * time.Second)
		ctx := With(context.Background(), at)
		if _, ok := ctx.Deadline(); ok || ctx.Done() != nil || ctx.Err() != nil {
			t.Fatalf("With changed the context: Deadline %v, Done %v, Err %v", ok, ctx.Done() != nil, ctx.Err())
		}
		if got, ok := Of(ctx); !ok || !got.Equal(at) {
			t.Errorf("Of = %v, %v; want %v, true", got, ok, at)
		}
		if got, ok := Deadline(ctx); !ok || !got.Equal(at) {
			t.Errorf("Deadline = %v, %v; want %v, true", got, ok, at)
		}
		if _, ok := Of(context.Background()); ok {
			t.Errorf("Of(Background) reports a deadline")
		}
		if got := With(ctx, start.Add(time.Second)); !mustOf(t, got).Equal(start.Add(time.Second)) {
			t.Errorf("an inner carried deadline does not shadow the outer one")
		}
		own, cancel := context.WithDeadline(ctx, start.Add(time.Second))
		defer cancel()
		if _, ok := Of(own); ok {
			t.Errorf("Of under an earlier own deadline reports the carried one")
		}
		if got, _ := Deadline(own); !got.Equal(start.Add(time.Second)) {
			t.Errorf("Deadline under an earlier own deadline = %v, want the own one", got)
		}
		if b, cancel := Bound(own); b != own {
			t.Errorf("Bound under an earlier own deadline derived a context")
		} else {
			cancel()
		}
		b, cancel := Bound(ctx)
		defer cancel()
		if err := Err(ctx); err != nil {
			t.Errorf("Err before the carried deadline = %v, want nil", err)
		}
		<-b.Done()
		if took := time.Since(start); took != 2*time.Second || !errors.Is(b.Err(), context.DeadlineExceeded) {
			t.Errorf("Bound's context ended after %v with %v; want 2s, DeadlineExceeded", took, b.Err())
		}
		if err := Err(ctx); !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			t.Errorf("Err past the carried deadline = %v (ctx.Err %v); want DeadlineExceeded (nil)", err, ctx.Err())
		}
	})
}

func mustOf(t *testing.T, ctx context.Context) time.Time {
	t.Helper()
	at, ok := Of(ctx)
	if !ok {
		t.Fatal("Of reports no deadline")
	}
	return at
}
