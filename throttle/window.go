package throttle

import (
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico/internal/window"
)

// numBuckets is how many buckets a window is kept in: Config.Window/32 each
// (3.75 s of the default 2 minutes), so a count leaves the window at most one
// bucket width late.
const numBuckets = 32

// batch is the most accepts a clean window counts before stamping them (see
// counts.pending).
const batch = 64

// counts are a destination's requests and accepts over its sliding window
// (a window.Time whose counters 0 and 1 are requests and accepts).
//
// While the window holds only accepts it is clean: nothing is throttled (the
// probability is 0 whatever the counts), and an accepted call only adds one
// to pending, without reading the clock; every batch-th accept stamps the
// pending ones into the current bucket. The first call counted without an
// accept stamps the pending accepts, counts itself and makes the window
// dirty: from then on every call reads the clock, stamps what it counts and
// computes the probability, until the window holds accepts only again.
type counts struct {
	pending atomic.Uint64 // accepts not yet stamped (clean state)
	fails   atomic.Uint64 // requests counted without an accept, ever
	cleanAt atomic.Uint64 // fails when the window was last found clean
	win     *window.Time
}

// isDirty reports whether the window may hold a request that was not
// accepted: one was counted since the window was last found clean.
func (c *counts) isDirty() bool { return c.fails.Load() != c.cleanAt.Load() }

// clean marks the window clean as of seq, the value of fails read before its
// totals were found to be accepts only. A request not accepted and counted
// since then has moved fails past seq, and the window stays dirty.
func (c *counts) clean(seq uint64) { c.cleanAt.Store(seq) }

// refused counts a request not accepted at now, and makes the window dirty.
func (c *counts) refused(now time.Duration) {
	c.win.Add(0, now, window.Counts{1})
	c.fails.Add(1)
}

// stamp counts the pending accepts at now, as requests and accepts both.
func (c *counts) stamp(now time.Duration) {
	if c.pending.Load() == 0 {
		return
	}
	if n := int(c.pending.Swap(0)); n > 0 {
		c.win.Add(0, now, window.Counts{n, n})
	}
}

// totals returns the requests and accepts counted in the window that ends at
// now, the pending accepts included.
func (c *counts) totals(now time.Duration) (requests, accepts uint64) {
	w := c.win.Sum(0, now)
	p := c.pending.Load()
	return uint64(w[0]) + p, uint64(w[1]) + p
}

// probability is the SRE book's client-side throttling probability for
// requests and accepts in the window: max(0, (requests - k*accepts) /
// (requests + 1)), in [0, 1] for every k (0 for a NaN, which an infinite
// k with no accepts would make). Pure.
func probability(requests, accepts uint64, k float64) float64 {
	p := (float64(requests) - k*float64(accepts)) / (float64(requests) + 1)
	if !(p > 0) {
		return 0
	}
	return p
}
