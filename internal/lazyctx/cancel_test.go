package lazyctx

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

var errLost = errors.New("lost")

// cancelStd and cancelLazy derive a cancelable context the standard way and
// as a Cancelable.
func cancelStd(parent context.Context) (context.Context, context.CancelCauseFunc) {
	return context.WithCancelCause(parent)
}

func cancelLazy(parent context.Context) (context.Context, context.CancelCauseFunc) {
	c := WithCancel(parent)
	return c, c.Cancel
}

// TestCancelableAsStandard: whatever is observed, and when (before or
// after Cancel, with Done asked first or not, the parent ended first or
// not), a Cancelable looks as context.WithCancelCause's context does,
// except the one documented difference.
func TestCancelableAsStandard(t *testing.T) {
	errParent := errors.New("parent")
	steps := []struct {
		name         string
		waitFirst    bool // ask Done before anything ends
		parentFirst  bool // cancel the parent (with errParent) first
		cause        error
		wantLazyDiff bool // the documented difference: Cancel after an unseen parent end
	}{
		{name: "cancel", cause: errLost},
		{name: "cancel nil", cause: nil},
		{name: "wait then cancel", waitFirst: true, cause: errLost},
		{name: "wait then cancel nil", waitFirst: true},
		{name: "parent first, waited", waitFirst: true, parentFirst: true, cause: errLost},
		{name: "parent first, unseen", parentFirst: true, cause: errLost, wantLazyDiff: true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			run := func(derive func(context.Context) (context.Context, context.CancelCauseFunc)) []string {
				parent, cancelParent := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
				defer cancelParent(nil)
				ctx, cancel := derive(parent)
				var seen []string
				seen = append(seen, look(ctx, s.waitFirst))
				if s.parentFirst {
					cancelParent(errParent)
					seen = append(seen, look(ctx, s.waitFirst))
				}
				cancel(s.cause)
				cancel(errors.New("second cancel is ignored"))
				seen = append(seen, look(ctx, false), look(ctx, true))
				return seen
			}
			std, lazy := run(cancelStd), run(cancelLazy)
			for i := range std {
				same := std[i] == lazy[i]
				if s.wantLazyDiff && i >= 2 {
					same = !same
				}
				if !same {
					t.Errorf("step %d: lazy %q, standard %q", i, lazy[i], std[i])
				}
			}
		})
	}
}

// TestCancelableChildren: contexts derived from a Cancelable (standard
// children, AfterFunc) end when it is canceled, with its cause, whether or
// not it had been waited on, and no goroutine is left (goleak).
func TestCancelableChildren(t *testing.T) {
	c := WithCancel(context.Background())
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	called := make(chan struct{})
	stop := context.AfterFunc(c, func() { close(called) })
	defer stop()
	c.Cancel(errLost)
	<-child.Done()
	<-called
	if got := context.Cause(child); got != errLost {
		t.Errorf("Cause(child) = %v, want %v", got, errLost)
	}
	after, cancelAfter := context.WithCancel(c) // derived once c ended
	defer cancelAfter()
	if got := after.Err(); got != context.Canceled {
		t.Errorf("child made after Cancel: Err() = %v, want %v", got, context.Canceled)
	}
}

// TestCancelableDeadline: the parent's deadline, and its end, show through.
func TestCancelableDeadline(t *testing.T) {
	at := time.Now().Add(time.Hour)
	parent, cancel := context.WithDeadline(context.Background(), at)
	c := WithCancel(parent)
	if d, ok := c.Deadline(); !ok || !d.Equal(at) {
		t.Errorf("Deadline() = %v, %v, want %v, true", d, ok, at)
	}
	cancel()
	if got := c.Err(); got != context.Canceled {
		t.Errorf("after the parent's cancel: Err() = %v, want %v", got, context.Canceled)
	}
	c.Cancel(nil)
}

// TestCancelableConcurrent: Done, Err, Cause and Cancel from several
// goroutines at once agree (run with -race).
func TestCancelableConcurrent(t *testing.T) {
	for range 200 {
		c := WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { <-c.Done() })
		wg.Go(func() { c.Cancel(errLost) })
		wg.Go(func() { c.Cancel(nil) })
		wg.Go(func() { _ = context.Cause(c) })
		wg.Wait()
		if c.Err() != context.Canceled {
			t.Fatalf("Err() = %v, want %v", c.Err(), context.Canceled)
		}
		if got := context.Cause(c); got != errLost && got != context.Canceled {
			t.Fatalf("Cause() = %v, want %v or %v", got, errLost, context.Canceled)
		}
		select {
		case <-c.Done():
		default:
			t.Fatal("Done not closed after Cancel")
		}
	}
}

// TestCancelableAllocs: one allocation when nothing waits on it; Err,
// Value and a Cancel without cause add none.
func TestCancelableAllocs(t *testing.T) {
	ctx := context.WithValue(context.Background(), key{}, "v")
	if n := testing.AllocsPerRun(1000, func() {
		c := WithCancel(ctx)
		_ = c.Err()
		_ = c.Value(key{})
		c.Cancel(nil)
	}); n != 1 {
		t.Errorf("WithCancel, Err, Value, Cancel: %v allocations, want 1", n)
	}
}

func BenchmarkWithCancel(b *testing.B) {
	b.Run("standard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, cancel := context.WithCancelCause(context.Background())
			cancel(nil)
		}
	})
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			WithCancel(context.Background()).Cancel(nil)
		}
	})
}
