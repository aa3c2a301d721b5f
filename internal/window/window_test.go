package window

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCountMatchesNaive feeds random outcomes to a Count and checks its sum
// against a plain list of the last n outcomes, across resets.
func TestCountMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 10, 100} {
		r := NewCount(n)
		var log [][2]bool // flags of the calls since the last reset
		for step := range 5000 {
			if rng.IntN(500) == 0 {
				r.Reset()
				log = log[:0]
			}
			f := [2]bool{rng.IntN(3) == 0, rng.IntN(4) == 0}
			r.Add(f[0], f[1])
			log = append(log, f)
			var want Counts
			for _, f := range log[max(0, len(log)-n):] {
				want[0]++
				if f[0] {
					want[1]++
				}
				if f[1] {
					want[2]++
				}
			}
			if got := r.Sum(); got != want {
				t.Fatalf("n=%d step %d: Sum() = %v, want %v", n, step, got, want)
			}
		}
	}
}

// TestTimeMatchesNaive does the same for a Time: calls at random times,
// summed against the calls of the buckets still in the window, the window
// made at a negative reading (a synctest bubble's).
func TestTimeMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const width, buckets = 100, 10
	start := time.Duration(-1_000_000_007)
	w := NewTime(start, width, buckets)
	type ev struct {
		at time.Duration
		d  Counts
	}
	var log []ev
	var gen uint64
	now := start
	for step := range 5000 {
		now += time.Duration(rng.Int64N(40))
		if rng.IntN(700) == 0 {
			gen++
			log = log[:0]
		}
		d := Counts{1, rng.IntN(3) / 2, rng.IntN(5) / 4}
		w.Add(gen, now, d)
		log = append(log, ev{now, d})
		var want Counts
		for _, e := range log {
			if (now-start)/width-(e.at-start)/width < buckets {
				for i := range want {
					want[i] += e.d[i]
				}
			}
		}
		if got := w.Sum(gen, now); got != want {
			t.Fatalf("step %d at %d: Sum() = %v, want %v", step, now, got, want)
		}
	}
}

// TestTimeKeepsLaterGeneration: a call of an earlier period that reaches a
// bucket after a later period wrote it leaves the bucket alone.
func TestTimeKeepsLaterGeneration(t *testing.T) {
	w := NewTime(0, 100, 10)
	w.Add(3, 150, Counts{1, 1})
	w.Add(2, 160, Counts{1}) // a straggler of generation 2
	if got, want := w.Sum(3, 160), (Counts{1, 1}); got != want {
		t.Errorf("Sum(gen 3) = %v, want %v", got, want)
	}
	// Generation numbers wrap at 2^24: generation 0 after 2^24-1 is later.
	w.Add(0, 250, Counts{1, 1})
	w.Add(genMask, 260, Counts{1})
	if got, want := w.Sum(0, 260), (Counts{1, 1}); got != want {
		t.Errorf("Sum(gen 0 after wrap) = %v, want %v", got, want)
	}
}

// TestTimeLateCall: a call whose clock read is older than its bucket's lap
// counts in that lap, one width late, and is not lost.
func TestTimeLateCall(t *testing.T) {
	w := NewTime(0, 10, 4)
	w.Add(0, 45, Counts{1})   // lap 4, bucket 0
	w.Add(0, 5, Counts{1, 1}) // lap 0, bucket 0: read before lap 4 opened
	if got, want := w.Sum(0, 45), (Counts{2, 1}); got != want {
		t.Errorf("Sum after a late call = %v, want %v", got, want)
	}
}

// TestTimeIndexWraps: bucket indexes are kept modulo 2^40; a window of
// 1 ns buckets wraps after 2^40 ns (18 minutes) and must keep recording.
func TestTimeIndexWraps(t *testing.T) {
	w := NewTime(0, 1, 10)
	const wrap = time.Duration(1) << idxBits
	w.Add(0, wrap-1, Counts{1, 1})
	w.Add(0, wrap+9, Counts{1, 1}) // same bucket, index 9 after the wrap
	w.Add(0, wrap+9, Counts{1})
	if got, want := w.Sum(0, wrap+9), (Counts{2, 1}); got != want {
		t.Errorf("Sum after the wrap = %v, want %v", got, want)
	}
}

// TestTimeLaps: a count leaves the window when its bucket's lap is n laps
// old, and a bucket reused by a later lap starts empty.
func TestTimeLaps(t *testing.T) {
	const width = 10
	w := NewTime(0, width, 32)
	w.Add(0, 0, Counts{3, 1})   // lap 0
	w.Add(0, 95, Counts{2, 2})  // lap 9
	w.Add(0, 319, Counts{1, 0}) // lap 31
	if got, want := w.Sum(0, 319), (Counts{6, 3}); got != want {
		t.Errorf("Sum at 319 = %v, want %v", got, want)
	}
	if got, want := w.Sum(0, 320), (Counts{3, 2}); got != want { // lap 32: lap 0 has left
		t.Errorf("Sum at 320 = %v, want %v", got, want)
	}
	w.Add(0, 325, Counts{5, 5}) // lap 32 reuses lap 0's bucket
	if got, want := w.Sum(0, 325), (Counts{8, 7}); got != want {
		t.Errorf("Sum at 325 = %v, want %v", got, want)
	}
}
