package lazyctx

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestEndedAsErr: Ended says what Err says, for every kind of context in
// a chain (standard, Entry's own and mirroring, WithEarlier, Cancelable,
// materialized or not), as time passes and contexts are canceled.
func TestEndedAsErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		defer cancelParent()
		std, cancelStd := context.WithTimeout(parent, 4*time.Second)
		defer cancelStd()
		entry, ec := Entry(parent, 3*time.Second) // its own deadline
		defer ec.Cancel()
		Stale(entry)
		mirror, mc := Entry(std, time.Hour) // std's deadline is earlier: mirrors it
		defer mc.Cancel()
		Stale(mirror)
		share, sc := WithEarlier(entry, 2*time.Second, nil) // ends at 1 s
		defer sc.Cancel()
		done, dc := WithTimeout(share, 10*time.Second, nil) // share's, materialized below
		defer dc.Cancel()
		<-done.Done()
		cancelable := WithCancel(share)
		canceled := WithCancel(entry)
		canceled.Cancel(nil)
		ctxs := map[string]context.Context{"std": std, "entry": entry, "mirror": mirror, "share": share,
			"done": done, "cancelable": cancelable, "canceled": canceled, "background": context.Background()}
		check := func(when string) {
			t.Helper()
			for name, ctx := range ctxs {
				if got, want := Ended(ctx), ctx.Err() != nil; got != want {
					t.Errorf("%s: Ended(%s) = %v, want %v (Err %v)", when, name, got, want, ctx.Err())
				}
			}
		}
		check("at 0")
		time.Sleep(1500 * time.Millisecond)
		check("at 1.5s")
		time.Sleep(2 * time.Second)
		check("at 3.5s")
		cancelParent()
		check("parent canceled")
	})
}

// TestEndedLent: while Entry lends its reading, Ended compares the deadline
// with that reading, as Now and Left do; EndedAt with the reading it is
// given.
func TestEndedLent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, c := Entry(context.Background(), time.Second)
		defer c.Cancel()
		read := Now(ctx)
		time.Sleep(2 * time.Second)
		if Ended(ctx) {
			t.Error("Ended while lent, 2 s after a deadline of 1 s = true, want false: Entry's reading is the time")
		}
		if !EndedAt(ctx, read+time.Second) || EndedAt(ctx, read+time.Second-1) {
			t.Errorf("EndedAt(deadline, deadline-1ns) = %v, %v; want true, false", EndedAt(ctx, read+time.Second), EndedAt(ctx, read+time.Second-1))
		}
		Stale(ctx)
		if !Ended(ctx) {
			t.Error("Ended after Stale, 2 s after a deadline of 1 s = false, want true")
		}
	})
}
