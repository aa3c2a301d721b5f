package gap

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	errFirst = errors.New("first")
	errGap   = errors.New("gap")
	errLate  = errors.New("late")
	errOwn   = errors.New("own cut")
)

// step is what the stream does at a time since Start, and what the verb
// returns: Sign's first and err, Cut's or Ended's bool (first), Settle's
// err.
type step struct {
	at    time.Duration
	verb  string // sign, hold (Sign(true)), release, cut, settle, ended
	first bool
	err   error
}

// TestBound: a Bound cuts the stream when First runs out before the first
// sign or Gap after the latest one (or after the caller's OnChunk let go
// of a held chunk), with that bound's cause, exactly then, and never with
// a zero bound; a sign re-arms it; Cut cuts at once; a sign after the cut
// returns its cause, and one after Settle returns Late.
func TestBound(t *testing.T) {
	both := Limits{First: time.Second, Gap: 2 * time.Second, FirstCause: errFirst, GapCause: errGap, Late: errLate}
	for _, c := range []struct {
		name  string
		l     Limits
		steps []step
		cutAt time.Duration // 0: never cut
		cause error
	}{
		{"first late", both, []step{{2 * time.Second, "sign", false, errFirst}, {5 * time.Second, "settle", false, errFirst}}, time.Second, errFirst},
		{"gap after a sign", both, []step{{500 * time.Millisecond, "sign", true, nil}, {2 * time.Second, "ended", false, nil}, {3 * time.Second, "ended", true, nil}, {5 * time.Second, "settle", false, errGap}}, 2500 * time.Millisecond, errGap},
		{"each sign re-arms", both, []step{{500 * time.Millisecond, "sign", true, nil}, {2 * time.Second, "sign", false, nil}, {3500 * time.Millisecond, "sign", false, nil}, {9 * time.Second, "settle", false, errGap}}, 5500 * time.Millisecond, errGap},
		{"a hold stops the clock", both, []step{{500 * time.Millisecond, "hold", true, nil}, {4 * time.Second, "release", false, nil}, {9 * time.Second, "settle", false, errGap}}, 6 * time.Second, errGap},
		{"no first bound", Limits{Gap: 2 * time.Second, GapCause: errGap}, []step{{5 * time.Second, "sign", true, nil}, {9 * time.Second, "settle", false, errGap}}, 7 * time.Second, errGap},
		{"no gap bound", Limits{First: time.Second, FirstCause: errFirst}, []step{{500 * time.Millisecond, "sign", true, nil}, {9 * time.Second, "settle", false, nil}}, 0, nil},
		{"one bound for both", Limits{First: 2 * time.Second, Gap: 2 * time.Second, FirstCause: errGap, GapCause: errGap}, []step{{1500 * time.Millisecond, "sign", true, nil}, {9 * time.Second, "settle", false, errGap}}, 3500 * time.Millisecond, errGap},
		{"own cut", both, []step{{500 * time.Millisecond, "sign", true, nil}, {1500 * time.Millisecond, "cut", true, nil}, {1600 * time.Millisecond, "sign", false, errOwn}, {1700 * time.Millisecond, "cut", false, nil}, {9 * time.Second, "settle", false, errOwn}}, 1500 * time.Millisecond, errOwn},
		{"settled in time", both, []step{{500 * time.Millisecond, "sign", true, nil}, {time.Second, "settle", false, nil}, {1500 * time.Millisecond, "ended", true, nil}, {2 * time.Second, "sign", false, errLate}, {3 * time.Second, "cut", false, nil}}, 0, nil},
		{"no Late passes", Limits{Gap: time.Second, GapCause: errGap}, []step{{500 * time.Millisecond, "settle", false, nil}, {time.Second, "sign", false, nil}}, 0, nil},
		{"no bound", Limits{}, []step{{time.Second, "sign", true, nil}, {2 * time.Second, "hold", false, nil}, {3 * time.Second, "release", false, nil}, {9 * time.Second, "settle", false, nil}}, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				var b Bound
				start := time.Now()
				var cutAt time.Duration
				context.AfterFunc(ctx, func() { cutAt = time.Since(start) })
				b.Start(cancel, c.l)
				for _, s := range c.steps {
					time.Sleep(s.at - time.Since(start))
					if first, err := do(&b, s.verb); first != s.first || err != s.err {
						t.Errorf("%s at %v = %v, %v; want %v, %v", s.verb, s.at, first, err, s.first, s.err)
					}
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if cutAt != c.cutAt || (c.cause != nil && context.Cause(ctx) != c.cause) {
					t.Errorf("cut at %v with %v; want %v, %v", cutAt, context.Cause(ctx), c.cutAt, c.cause)
				}
			})
		})
	}
}

// do runs verb on b and returns what it returns.
func do(b *Bound, verb string) (bool, error) {
	switch verb {
	case "sign":
		return b.Sign(false)
	case "hold":
		return b.Sign(true)
	case "release":
		b.Release()
	case "cut":
		return b.Cut(errOwn), nil
	case "settle":
		return false, b.Settle()
	case "ended":
		return b.Ended(), nil
	}
	return false, nil
}
