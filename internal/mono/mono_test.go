package mono

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNow: readings measure what time.Since measures, outside a bubble and
// inside one (exactly, on the bubble's clock), and Of converts a time to the
// same clock.
func TestNow(t *testing.T) {
	t0, r0 := time.Now(), Now()
	r1, el := Now(), time.Since(t0)
	if d := r1 - r0; d < 0 || d > el {
		t.Errorf("Now advanced %v between two reads that time.Since put %v apart", d, el)
	}
	if d := Of(t0) - r0; d > 0 || d < -el {
		t.Errorf("Of(time.Now()) - Now() read just after = %v, want in [-%v, 0]", d, el)
	}
	synctest.Test(t, func(t *testing.T) {
		start, at := Now(), time.Now()
		time.Sleep(1500 * time.Millisecond)
		if d := Now() - start; d != 1500*time.Millisecond {
			t.Errorf("in a bubble, Now advanced %v over a 1.5s sleep, want exactly 1.5s", d)
		}
		if d := Of(at) - start; d != 0 {
			t.Errorf("in a bubble, Of(time.Now()) - Now() = %v, want 0", d)
		}
	})
}

func TestAdd(t *testing.T) {
	const maxD, minD = time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for _, c := range []struct{ a, b, sum time.Duration }{
		{1, 2, 3},
		{-5, 3, -2},
		{maxD, 1, maxD},
		{1, maxD, maxD},
		{-2, maxD, maxD - 2},
		{minD, -1, minD},
		{minD, minD, minD},
		{maxD, minD, -1},
		{-1, minD, minD},
		{0, minD, minD},
	} {
		if got := Add(c.a, c.b); got != c.sum {
			t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.sum)
		}
	}
}
