package lazyctx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/internal/mono"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errShare = errors.New("share timeout")

// shareKind gives the Contexts of the tests errShare as their cause.
var shareKind = &Kind{Cause: errShare}

type key struct{}

// mk derives a context bounded by at with cause, and its cancel.
type mk func(parent context.Context, at time.Time, cause error) (context.Context, func())

func std(parent context.Context, at time.Time, cause error) (context.Context, func()) {
	return context.WithDeadlineCause(parent, at, cause)
}

func lazy(parent context.Context, at time.Time, cause error) (context.Context, func()) {
	ctx, c := WithDeadline(parent, at, &Kind{Cause: cause})
	return ctx, c.Cancel
}

// look describes ctx now: its Err, its Cause, whether Done is closed,
// the value under key, and its deadline.
func look(ctx context.Context, done bool) string {
	d, _ := ctx.Deadline()
	s := fmt.Sprintf("err=%v cause=%v v=%v deadline=%v", ctx.Err(), context.Cause(ctx), ctx.Value(key{}), d.Sub(bubbleStart))
	if done {
		select {
		case <-ctx.Done():
			s += " done"
		default:
			s += " open"
		}
	}
	return s
}

// bubbleStart is the bubble's start: synctest's clock starts at 2000-01-01 UTC.
var bubbleStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// The scenarios, each run in its own bubble with the standard context and
// with a Context: what every observer sees must be the same, at the same
// virtual times. The parent carries a value and is canceled (with a
// cause) or given its own later deadline as the scenario says.
var scenarios = []struct {
	name string
	run  func(t *testing.T, derive mk) []string
	want []string
}{
	{"unobserved until after the deadline", func(t *testing.T, derive mk) []string {
		ctx, cancel := derive(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Second), errShare)
		defer cancel()
		out := []string{look(ctx, false)}
		time.Sleep(2 * time.Second) // past it: at the very instant the standard one's timer races the sleeper
		return append(out, look(ctx, true), look(ctx, true))
	}, []string{
		"err=<nil> cause=<nil> v=v deadline=1s",
		"err=context deadline exceeded cause=share timeout v=v deadline=1s done",
		"err=context deadline exceeded cause=share timeout v=v deadline=1s done",
	}},
	{"waited on", func(t *testing.T, derive mk) []string {
		ctx, cancel := derive(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Second), errShare)
		defer cancel()
		start := time.Now()
		out := []string{look(ctx, true)}
		<-ctx.Done()
		return append(out, time.Since(start).String(), look(ctx, true))
	}, []string{
		"err=<nil> cause=<nil> v=v deadline=1s open",
		"1s",
		"err=context deadline exceeded cause=share timeout v=v deadline=1s done",
	}},
	{"no cause", func(t *testing.T, derive mk) []string {
		ctx, cancel := derive(context.Background(), time.Now().Add(time.Second), nil)
		defer cancel()
		time.Sleep(2 * time.Second)
		return []string{look(ctx, true)}
	}, []string{"err=context deadline exceeded cause=context deadline exceeded v=<nil> deadline=1s done"}},
	{"canceled before the deadline", func(t *testing.T, derive mk) []string {
		ctx, cancel := derive(context.Background(), time.Now().Add(time.Second), errShare)
		cancel()
		out := []string{look(ctx, true)}
		time.Sleep(2 * time.Second)
		cancel()
		return append(out, look(ctx, true))
	}, []string{
		"err=context canceled cause=context canceled v=<nil> deadline=1s done",
		"err=context canceled cause=context canceled v=<nil> deadline=1s done",
	}},
	{"canceled after a wait", func(t *testing.T, derive mk) []string {
		ctx, cancel := derive(context.Background(), time.Now().Add(time.Second), errShare)
		go func() {
			time.Sleep(300 * time.Millisecond)
			cancel()
		}()
		start := time.Now()
		<-ctx.Done()
		return []string{time.Since(start).String(), look(ctx, true)}
	}, []string{"300ms", "err=context canceled cause=context canceled v=<nil> deadline=1s done"}},
	{"parent canceled, not waited on", func(t *testing.T, derive mk) []string {
		parent, pcancel := context.WithCancelCause(context.Background())
		ctx, cancel := derive(parent, time.Now().Add(time.Second), errShare)
		defer cancel()
		pcancel(errors.New("caller gone"))
		out := []string{look(ctx, false)}
		time.Sleep(2 * time.Second) // the deadline passing later changes nothing
		return append(out, look(ctx, true))
	}, []string{
		"err=context canceled cause=caller gone v=<nil> deadline=1s",
		"err=context canceled cause=caller gone v=<nil> deadline=1s done",
	}},
	{"parent canceled while waited on", func(t *testing.T, derive mk) []string {
		parent, pcancel := context.WithCancelCause(context.Background())
		ctx, cancel := derive(parent, time.Now().Add(time.Second), errShare)
		defer cancel()
		go func() {
			time.Sleep(200 * time.Millisecond)
			pcancel(errors.New("caller gone"))
		}()
		start := time.Now()
		<-ctx.Done()
		return []string{time.Since(start).String(), look(ctx, true)}
	}, []string{"200ms", "err=context canceled cause=caller gone v=<nil> deadline=1s done"}},
	{"parent's later deadline passed too", func(t *testing.T, derive mk) []string {
		parent, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer pcancel()
		ctx, cancel := derive(parent, time.Now().Add(time.Second), errShare)
		defer cancel()
		time.Sleep(3 * time.Second)
		return []string{look(ctx, true)}
	}, []string{"err=context deadline exceeded cause=share timeout v=<nil> deadline=1s done"}},
	{"a child and AfterFunc", func(t *testing.T, derive mk) []string {
		ctx, cancel := derive(context.Background(), time.Now().Add(time.Second), errShare)
		defer cancel()
		child, ccancel := context.WithCancel(ctx)
		defer ccancel()
		start := time.Now()
		ran := make(chan time.Duration, 1)
		context.AfterFunc(ctx, func() { ran <- time.Since(start) })
		<-child.Done()
		return []string{time.Since(start).String(), (<-ran).String(), look(child, true)}
	}, []string{"1s", "1s", "err=context deadline exceeded cause=share timeout v=<nil> deadline=1s done"}},
	{"nested, the inner earlier", func(t *testing.T, derive mk) []string {
		outer, ocancel := derive(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(2*time.Second), nil)
		defer ocancel()
		inner, icancel := derive(outer, time.Now().Add(time.Second), errShare)
		start := time.Now()
		<-inner.Done()
		out := []string{time.Since(start).String(), look(inner, true), look(outer, true)}
		icancel()
		<-outer.Done()
		return append(out, time.Since(start).String(), look(outer, true), look(inner, true))
	}, []string{
		"1s",
		"err=context deadline exceeded cause=share timeout v=v deadline=1s done",
		"err=<nil> cause=<nil> v=v deadline=2s open",
		"2s",
		"err=context deadline exceeded cause=context deadline exceeded v=v deadline=2s done",
		"err=context deadline exceeded cause=share timeout v=v deadline=1s done",
	}},
	{"nested, the outer canceled first", func(t *testing.T, derive mk) []string {
		outer, ocancel := derive(context.Background(), time.Now().Add(2*time.Second), nil)
		inner, icancel := derive(outer, time.Now().Add(time.Second), errShare)
		defer icancel()
		go func() {
			time.Sleep(100 * time.Millisecond)
			ocancel()
		}()
		start := time.Now()
		<-inner.Done()
		return []string{time.Since(start).String(), look(inner, true), look(outer, true)}
	}, []string{
		"100ms",
		"err=context canceled cause=context canceled v=<nil> deadline=1s done",
		"err=context canceled cause=context canceled v=<nil> deadline=2s done",
	}},
	{"nested, the grandparent canceled", func(t *testing.T, derive mk) []string {
		root, rcancel := context.WithCancelCause(context.Background())
		outer, ocancel := derive(root, time.Now().Add(2*time.Second), nil)
		defer ocancel()
		inner, icancel := derive(outer, time.Now().Add(time.Second), errShare)
		defer icancel()
		go func() {
			time.Sleep(100 * time.Millisecond)
			rcancel(errors.New("caller gone"))
		}()
		<-inner.Done()
		return []string{look(inner, true), look(outer, true)}
	}, []string{
		"err=context canceled cause=caller gone v=<nil> deadline=1s done",
		"err=context canceled cause=caller gone v=<nil> deadline=2s done",
	}},
}

// TestAsStandard: in every scenario a Context is seen exactly as
// context.WithDeadlineCause's: the same Err, Cause, Done, values and
// deadline at the same virtual times.
func TestAsStandard(t *testing.T) {
	for _, sc := range scenarios {
		for _, d := range []struct {
			name   string
			derive mk
		}{{"std", std}, {"lazy", lazy}} {
			t.Run(sc.name+"/"+d.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					got := sc.run(t, d.derive)
					if fmt.Sprint(got) != fmt.Sprint(sc.want) {
						t.Errorf("observed\n%q\nwant\n%q", got, sc.want)
					}
				})
			})
		}
	}
}

// TestNoDeriveWhenParentEarlier: a parent whose deadline is not later than
// at is returned as is, with a nil *Context whose Cancel does nothing.
func TestNoDeriveWhenParentEarlier(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pd, _ := parent.Deadline()
	for _, at := range []time.Time{pd, pd.Add(time.Second)} {
		ctx, c := WithDeadline(parent, at, shareKind)
		if ctx != parent || c != nil {
			t.Errorf("WithDeadline(parent, parent's deadline + %v) = %v, %v; want parent, nil", at.Sub(pd), ctx, c)
		}
		c.Cancel()
	}
	ctx, c := WithDeadline(parent, pd.Add(-time.Second), shareKind)
	defer c.Cancel()
	if d, _ := ctx.Deadline(); ctx == parent || c == nil || !d.Equal(pd.Add(-time.Second)) {
		t.Errorf("WithDeadline one second before the parent's = %v (deadline %v), want a Context", ctx, d)
	}
}

// TestDeadline: outside a bubble, Deadline gives back the time a Context
// was made with, the same at every call, and WithEarlier and Left measure
// from it; with a standard parent too.
func TestDeadline(t *testing.T) {
	at := time.Now().Add(time.Minute)
	ctx, c := WithDeadline(context.Background(), at, nil)
	defer c.Cancel()
	d1, ok1 := ctx.Deadline()
	d2, _ := ctx.Deadline()
	if !ok1 || !d1.Equal(at) || d1 != d2 {
		t.Errorf("Deadline = %v, %v then %v; want %v at every call", d1, ok1, d2, at)
	}
	if left, ok := Left(ctx); !ok || left <= 59*time.Second || left > time.Minute {
		t.Errorf("Left = %v, %v; want just under a minute", left, ok)
	}
	std, cancel := context.WithDeadline(context.Background(), at)
	defer cancel()
	for _, parent := range []context.Context{ctx, std} {
		inner, ic := WithEarlier(parent, 20*time.Second, shareKind)
		if d, _ := inner.Deadline(); !d.Equal(at.Add(-20*time.Second)) || ic == nil {
			t.Errorf("WithEarlier(%v, 20s) has deadline %v, want %v", parent, d, at.Add(-20*time.Second))
		}
		ic.Cancel()
		if same, ic := WithEarlier(parent, 0, shareKind); same != parent || ic != nil {
			t.Errorf("WithEarlier(parent, 0) = %v, %v; want parent, nil", same, ic)
		}
	}
	if left, ok := Left(context.Background()); left != 0 || ok {
		t.Errorf("Left(Background) = %v, %v; want 0, false", left, ok)
	}
}

// TestLazy: nothing is derived until something waits, and a Context
// materialized under a live one derives from the grandparent, once.
func TestLazy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, outer := WithDeadline(context.Background(), time.Now().Add(2*time.Second), nil)
		_, inner := WithDeadline(outer, time.Now().Add(time.Second), shareKind)
		if inner.Err() != nil || inner.Value(key{}) != nil || outer.slow.Load() != nil || inner.slow.Load() != nil {
			t.Fatal("Err or Value materialized a live Context")
		}
		inner.Done()
		kids := outer.slow.Load().kids
		if outer.derivedCtx() != nil || inner.derivedCtx() == nil || kids != inner || inner.slow.Load().next != nil {
			t.Fatalf("after inner.Done: outer materialized %v, inner %v, outer's kids %p (inner %p); want false, true, inner alone",
				outer.derivedCtx() != nil, inner.derivedCtx() != nil, kids, inner)
		}
		outer.Cancel()
		if inner.Err() != context.Canceled || outer.slow.Load().kids != nil {
			t.Errorf("after outer.Cancel: inner.Err = %v, kids %p; want canceled, none", inner.Err(), outer.slow.Load().kids)
		}
	})
}

// TestCancelAfterUnobservedDeadline: the one difference from the standard
// context. A deadline nobody observed before Cancel reads as canceled.
func TestCancelAfterUnobservedDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, c := WithDeadline(context.Background(), time.Now().Add(time.Second), shareKind)
		time.Sleep(2 * time.Second)
		c.Cancel()
		if err, cause := ctx.Err(), context.Cause(ctx); err != context.Canceled || cause != context.Canceled {
			t.Errorf("after an unobserved deadline and Cancel: Err %v, Cause %v; want canceled, canceled", err, cause)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, c := WithDeadline(context.Background(), time.Now().Add(time.Second), shareKind)
		time.Sleep(2 * time.Second)
		ctx.Err() // observed
		c.Cancel()
		if err, cause := ctx.Err(), context.Cause(ctx); err != context.DeadlineExceeded || cause != errShare {
			t.Errorf("after an observed deadline and Cancel: Err %v, Cause %v; want deadline exceeded, share timeout", err, cause)
		}
	})
}

// TestConcurrent: observers, waiters and Cancel race (run with -race);
// every waiter wakes and all agree on the end.
func TestConcurrent(t *testing.T) {
	for range 200 {
		_, outer := WithDeadline(context.Background(), time.Now().Add(time.Hour), nil)
		ctx, c := WithDeadline(outer, time.Now().Add(time.Millisecond), shareKind)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				switch i % 4 {
				case 0:
					<-ctx.Done()
				case 1:
					for ctx.Err() == nil {
					}
				case 2:
					context.Cause(ctx)
					<-ctx.Done()
				case 3:
					c.Cancel()
					outer.Cancel()
				}
				errs[i] = ctx.Err()
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != errs[0] || err == nil {
				t.Fatalf("Err seen by observer %d = %v, by 0 %v; want one non-nil end", i, err, errs[0])
			}
		}
		c.Cancel()
	}
}

func TestAllocs(t *testing.T) {
	parent := context.Background()
	at := time.Now().Add(time.Hour)
	if a := testing.AllocsPerRun(1000, func() {
		ctx, c := WithDeadline(parent, at, shareKind)
		ctx.Deadline()
		ctx.Err()
		ctx.Value(key{})
		c.Cancel()
	}); a != 1 {
		t.Errorf("allocs of WithDeadline, Deadline, Err, Value, Cancel = %v, want 1", a)
	}
}

func BenchmarkWithDeadline(b *testing.B) {
	parent := context.Background()
	b.Run("std", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, cancel := context.WithTimeout(parent, time.Hour)
			cancel()
		}
	})
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, c := WithTimeout(parent, time.Hour, nil)
			c.Cancel()
		}
	})
	b.Run("lazy+earlier", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, c := WithTimeout(parent, time.Hour, nil)
			left, _ := Left(ctx)
			_, c2 := WithEarlier(ctx, left/2, shareKind)
			c2.Cancel()
			c.Cancel()
		}
	})
}

type otherKey struct{}

// TestValues: the values given to WithEarlier shadow the parent's, before
// and after the Context materializes, and a Context derived from it (not
// adopted past it, which would skip them) sees them too.
func TestValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		values := context.WithValue(context.Background(), key{}, "shadow")
		parent, outer := WithDeadline(context.WithValue(context.WithValue(context.Background(), key{}, "parent"), otherKey{}, "other"),
			time.Now().Add(time.Hour), nil)
		defer outer.Cancel()
		ctx, c := WithEarlier(parent, 30*time.Minute, &Kind{Cause: errShare, Values: values})
		defer c.Cancel()
		kid, kc := WithTimeout(ctx, time.Minute, nil)
		defer kc.Cancel()
		look := func(when string) {
			for _, x := range []context.Context{ctx, kid} {
				if v, o := x.Value(key{}), x.Value(otherKey{}); v != "shadow" || o != "other" {
					t.Errorf("%s: Value(key) = %v, Value(otherKey) = %v; want shadow, other", when, v, o)
				}
			}
		}
		look("live")
		kid.Done() // materializes kid, which must derive from ctx, not past it
		if kids := ctx.(*Context).slow.Load(); kids != nil && kids.kids != nil {
			t.Error("a Context with values adopted a kid")
		}
		look("materialized")
		if d, _ := ctx.Deadline(); !d.Equal(time.Now().Add(30 * time.Minute)) {
			t.Errorf("deadline = %v, want 30 minutes from now", d)
		}
	})
}

// TestAt: At gives a Context's deadline as kept, a standard context's on
// the same clock, and none for a context without one.
func TestAt(t *testing.T) {
	d := time.Now().Add(time.Hour)
	std, cancel := context.WithDeadline(context.Background(), d)
	defer cancel()
	if at, ok := At(std); !ok || at != mono.Of(d) {
		t.Errorf("At(standard) = %v, %v, want %v, true", at, ok, mono.Of(d))
	}
	lazy, c := WithTimeout(context.Background(), time.Minute, nil)
	defer c.Cancel()
	if at, ok := At(lazy); !ok || at != c.at {
		t.Errorf("At(Context) = %v, %v, want %v, true", at, ok, c.at)
	}
	if _, ok := At(context.Background()); ok {
		t.Error("At(Background) reports a deadline")
	}
}
