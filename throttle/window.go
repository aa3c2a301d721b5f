package throttle

import (
	"sync"
	"sync/atomic"
)

// numBuckets is how many buckets a window is kept in: Config.Window/32 each
// (3.75 s of the default 2 minutes), so a count leaves the window at most one
// bucket width late.
const numBuckets = 32

// batch is the most accepts a clean window counts before stamping them (see
// window.pending).
const batch = 64

// window is a destination's sliding window of requests and accepts.
//
// While the window holds only accepts it is clean: nothing is throttled (the
// probability is 0 whatever the counts), and an accepted call only adds one
// to pending, without reading the clock; every batch-th accept stamps the
// pending ones into the current bucket. The first call counted without an
// accept stamps the pending accepts, counts itself and makes the window
// dirty: from then on every call reads the clock, stamps what it counts and
// computes the probability, until the window holds accepts only again.
type window struct {
	pending atomic.Uint64 // accepts not yet stamped (clean state)
	fails   atomic.Uint64 // requests counted without an accept, ever
	cleanAt atomic.Uint64 // fails when the window was last found clean
	mu      sync.Mutex    // serialises bucket resets
	buckets [numBuckets]bucket
}

// isDirty reports whether the window may hold a request that was not
// accepted: one was counted since the window was last found clean.
func (w *window) isDirty() bool { return w.fails.Load() != w.cleanAt.Load() }

// clean marks the window clean as of seq, the value of fails read before its
// totals were found to be accepts only. A request not accepted and counted
// since then has moved fails past seq, and the window stays dirty.
func (w *window) clean(seq uint64) { w.cleanAt.Store(seq) }

// bucket counts the calls of one bucket width. lap is the bucket's time
// index (now / width) plus one, 0 for a bucket never used; counts packs
// requests in its high 32 bits and accepts in its low 32.
type bucket struct {
	lap    atomic.Int64
	counts atomic.Uint64
}

func pack(requests, accepts uint64) uint64 { return requests<<32 | accepts }

// add counts requests and accepts at now (ns on the Throttle's clock) in its
// bucket, resetting the bucket first when it holds an older lap. A call that
// read its clock before another call opened a newer lap of the same bucket
// counts in the newer lap: one bucket width later than it happened.
func (w *window) add(width, now int64, requests, accepts uint64) {
	lap := now/width + 1
	b := &w.buckets[lap%numBuckets]
	if b.lap.Load() < lap {
		w.mu.Lock()
		if b.lap.Load() < lap {
			b.counts.Store(0)
			b.lap.Store(lap)
		}
		w.mu.Unlock()
	}
	b.counts.Add(pack(requests, accepts))
}

// stamp counts the pending accepts at now, as requests and accepts both.
func (w *window) stamp(width, now int64) {
	if w.pending.Load() == 0 {
		return
	}
	if n := w.pending.Swap(0); n > 0 {
		w.add(width, now, n, n)
	}
}

// totals returns the requests and accepts counted in the window that ends at
// now: the buckets of the last numBuckets laps, the current one included.
func (w *window) totals(width, now int64) (requests, accepts uint64) {
	lap := now/width + 1
	for i := range w.buckets {
		b := &w.buckets[i]
		if l := b.lap.Load(); l > lap-numBuckets && l <= lap {
			c := b.counts.Load()
			requests += c >> 32
			accepts += c & (1<<32 - 1)
		}
	}
	p := w.pending.Load()
	return requests + p, accepts + p
}

// probability is the SRE book's client-side throttling probability for
// requests and accepts in the window: max(0, (requests - k*accepts) /
// (requests + 1)). Pure.
func probability(requests, accepts uint64, k float64) float64 {
	p := (float64(requests) - k*float64(accepts)) / (float64(requests) + 1)
	return max(0, p)
}
