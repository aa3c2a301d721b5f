package breaker

import (
	"math/rand/v2"
	"testing"
)

// TestCountRingMatchesNaive feeds random outcomes to a count ring and checks
// its tally against a plain list of the last n outcomes, across resets.
func TestCountRingMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 10, 100} {
		r := newCountRing(n)
		var log []uint64 // flags of the calls since the last reset
		for step := range 5000 {
			if rng.IntN(500) == 0 {
				r.reset()
				log = log[:0]
			}
			var flags uint64
			if rng.IntN(3) == 0 {
				flags |= flagFailed
			}
			if rng.IntN(4) == 0 {
				flags |= flagSlow
			}
			if flags == 0 {
				r.success()
			} else {
				r.record(flags)
			}
			log = append(log, flags)
			var want tally
			for _, f := range log[max(0, len(log)-n):] {
				want.calls++
				if f&flagFailed != 0 {
					want.failed++
				}
				if f&flagSlow != 0 {
					want.slow++
				}
			}
			if got := r.tally(); got != want {
				t.Fatalf("n=%d step %d: tally() = %+v, want %+v", n, step, got, want)
			}
		}
	}
}

// TestTimeRingMatchesNaive does the same for a time ring: calls at random
// times, tallied against the calls of the buckets still in the window.
func TestTimeRingMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const width, buckets = 100, 10
	r := newTimeRing(width*buckets, buckets)
	type ev struct {
		at    int64
		flags uint64
	}
	var log []ev
	var gen uint64
	now := int64(0)
	for step := range 5000 {
		now += rng.Int64N(40)
		if rng.IntN(700) == 0 {
			gen++
			log = log[:0]
		}
		var flags uint64
		if rng.IntN(3) == 0 {
			flags |= flagFailed
		}
		if rng.IntN(5) == 0 {
			flags |= flagSlow
		}
		r.record(gen, now, flags)
		log = append(log, ev{now, flags})
		var want tally
		for _, e := range log {
			if now/width-e.at/width < buckets {
				want.calls++
				if e.flags&flagFailed != 0 {
					want.failed++
				}
				if e.flags&flagSlow != 0 {
					want.slow++
				}
			}
		}
		if got := r.tally(gen, now); got != want {
			t.Fatalf("step %d at %d: tally() = %+v, want %+v", step, now, got, want)
		}
	}
}

// TestTimeRingKeepsLaterGeneration: a call of an earlier closed period that
// reaches a bucket after a later period wrote it leaves the bucket alone.
func TestTimeRingKeepsLaterGeneration(t *testing.T) {
	r := newTimeRing(1000, 10)
	r.record(3, 150, flagFailed)
	r.record(2, 160, 0) // a straggler of generation 2
	if got, want := r.tally(3, 160), (tally{calls: 1, failed: 1}); got != want {
		t.Errorf("tally(gen 3) = %+v, want %+v", got, want)
	}
	// Generation numbers wrap at 2^24: generation 0 after 2^24-1 is later.
	r.record(0, 250, flagFailed)
	r.record(genMask, 260, 0)
	if got, want := r.tally(0, 260), (tally{calls: 1, failed: 1}); got != want {
		t.Errorf("tally(gen 0 after wrap) = %+v, want %+v", got, want)
	}
}

// TestTimeRingIndexWraps: bucket indexes are kept modulo 2^40; a window of
// 1 ns buckets wraps after 2^40 ns (18 minutes) and must keep recording.
func TestTimeRingIndexWraps(t *testing.T) {
	r := newTimeRing(10, 10)
	const wrap = int64(1) << idxBits
	r.record(0, wrap-1, flagFailed)
	r.record(0, wrap+9, flagFailed) // same slot, index 0 after the wrap
	r.record(0, wrap+9, 0)
	if got, want := r.tally(0, wrap+9), (tally{calls: 2, failed: 1}); got != want {
		t.Errorf("tally after the wrap = %+v, want %+v", got, want)
	}
}
