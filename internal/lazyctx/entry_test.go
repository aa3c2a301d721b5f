package lazyctx

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestEntryNothing: with no bound of its own and none in the parent, Entry
// makes nothing.
func TestEntryNothing(t *testing.T) {
	parent := context.WithValue(context.Background(), key{}, "v")
	for _, d := range []time.Duration{0, -time.Second} {
		if ctx, c := Entry(parent, d); ctx != parent || c != nil {
			t.Errorf("Entry(no deadline, %v) = %v, %v; want parent, nil", d, ctx, c)
		}
	}
}

// TestEntryLends: Entry's reading of the clock is what Now and Left use
// until Stale, in virtual time so that a stale reading shows.
func TestEntryLends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, c := Entry(context.Background(), time.Minute)
		defer c.Cancel()
		if d, _ := ctx.Deadline(); !d.Equal(time.Now().Add(time.Minute)) {
			t.Errorf("deadline = %v, want a minute from now", d)
		}
		read := Now(ctx)
		time.Sleep(time.Second)
		if got := Now(ctx); got != read {
			t.Errorf("Now while lent = %v, want Entry's reading %v", got, read)
		}
		if left, _ := Left(ctx); left != time.Minute {
			t.Errorf("Left while lent = %v, want 1m0s", left)
		}
		Stale(ctx)
		if got := Now(ctx); got != read+time.Second {
			t.Errorf("Now after Stale = %v, want %v", got, read+time.Second)
		}
		if left, _ := Left(ctx); left != 59*time.Second {
			t.Errorf("Left after Stale = %v, want 59s", left)
		}
		// Other contexts lend nothing.
		kid, kc := WithEarlier(ctx, time.Second, nil)
		defer kc.Cancel()
		Stale(kid)
		Stale(context.Background())
		if got := Now(kid); got != read+time.Second {
			t.Errorf("Now(a WithEarlier Context) = %v, want a new reading %v", got, read+time.Second)
		}
	})
}

// TestEntryChildEndsLoan: a child that takes the room Entry's reading
// was kept in ends the loan.
func TestEntryChildEndsLoan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, c := Entry(context.Background(), time.Minute)
		defer c.Cancel()
		read := Now(ctx)
		time.Sleep(time.Second)
		_, kc := WithTimeout(ctx, time.Second, nil)
		defer kc.Cancel()
		if got := Now(ctx); got != read+time.Second {
			t.Errorf("Now after a child took the room = %v, want a new reading %v", got, read+time.Second)
		}
	})
}

// TestEntryOwnDeadline: Entry bounds by d when the parent's deadline is
// later, as WithTimeout does, and the earlier of the two applies.
func TestEntryOwnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		ctx, c := Entry(parent, time.Minute)
		defer c.Cancel()
		if d, _ := ctx.Deadline(); !d.Equal(time.Now().Add(time.Minute)) {
			t.Errorf("deadline = %v, want a minute from now", d)
		}
		time.Sleep(time.Minute)
		if err := ctx.Err(); err != context.DeadlineExceeded {
			t.Errorf("Err after a minute = %v, want DeadlineExceeded", err)
		}
		if parent.Err() != nil {
			t.Error("the parent ended with the Context")
		}
	})
}

// TestEntryMirror: when the parent's deadline is the earlier, the Context
// Entry makes ends with the parent, as the parent does: the same deadline,
// error, cause, Done channel and values, and its Cancel leaves it so.
func TestEntryMirror(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errMine := errors.New("caller's cause")
		base := context.WithValue(context.Background(), key{}, "v")
		parent, cancel := context.WithTimeoutCause(base, time.Minute, errMine)
		defer cancel()
		for _, d := range []time.Duration{0, time.Minute, time.Hour} {
			ctx, c := Entry(parent, d)
			if ctx == parent || c == nil {
				t.Fatalf("Entry(parent, %v) made no Context", d)
			}
			pd, _ := parent.Deadline()
			if got, ok := ctx.Deadline(); !ok || got != pd {
				t.Errorf("Entry(parent, %v): deadline %v, want the parent's %v", d, got, pd)
			}
			if ctx.Done() != parent.Done() || ctx.Value(key{}) != "v" || ctx.Err() != nil {
				t.Errorf("Entry(parent, %v): Done, Value, Err differ from the parent's", d)
			}
			// A share under it is timed from it, and adopted past it.
			kid, kc := WithEarlier(ctx, 30*time.Second, nil)
			if kd, _ := kid.Deadline(); !kd.Equal(pd.Add(-30 * time.Second)) {
				t.Errorf("Entry(parent, %v): a share 30s earlier has deadline %v", d, kd)
			}
			<-kid.Done()
			if context.Cause(kid) != context.DeadlineExceeded || ctx.Err() != nil {
				t.Errorf("Entry(parent, %v): share ended with %v, entry with %v", d, context.Cause(kid), ctx.Err())
			}
			kc.Cancel()
			c.Cancel()
			if ctx.Err() != nil {
				t.Errorf("Entry(parent, %v): Err after Cancel = %v, want the parent's nil", d, ctx.Err())
			}
		}
		ctx, c := Entry(parent, 0)
		defer c.Cancel()
		<-ctx.Done()
		if ctx.Err() != context.DeadlineExceeded || context.Cause(ctx) != errMine {
			t.Errorf("Err, Cause at the parent's deadline = %v, %v; want DeadlineExceeded, %v", ctx.Err(), context.Cause(ctx), errMine)
		}
	})
}

// TestEntryAllocs: an Entry and a share under it allocate once.
func TestEntryAllocs(t *testing.T) {
	caller, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, tc := range []struct {
		name   string
		parent context.Context
		d      time.Duration
	}{{"own", context.Background(), time.Hour}, {"caller's", caller, 0}} {
		if a := testing.AllocsPerRun(1000, func() {
			ctx, c := Entry(tc.parent, tc.d)
			Now(ctx)
			left, _ := Left(ctx)
			Stale(ctx)
			_, kc := WithEarlier(ctx, left/2, shareKind)
			kc.Cancel()
			c.Cancel()
		}); a != 1 {
			t.Errorf("%s: allocs of Entry and a share = %v, want 1", tc.name, a)
		}
	}
}
