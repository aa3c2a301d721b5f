// Package window keeps the sliding windows of call outcomes that package
// breaker and package throttle count over: [Count], the last n calls, and
// [Time], the calls of the last n buckets of a fixed width (resilience4j's
// two kinds of sliding window). Each holds three counters per call, named
// by its user: a breaker's calls, failures and slow calls; a throttle's
// requests and accepts.
//
// Both are lock-free when a call is recorded, but for the first call of a
// time bucket, which locks to reset it, and both start a new period (a
// breaker's closed period) empty without clearing anything: a Count's
// slots are tagged with their call's sequence number, a Time's buckets
// with their period's generation.
package window

import (
	"sync"
	"sync/atomic"
	"time"
)

// Counts are a window's three counters. Within one bucket a counter is never
// seen below a later one (writers add them in order, readers read them in
// reverse), so a window's calls are never fewer than its failures.
type Counts [3]int

// Count is a window over the last n calls, each a call (counter 0) that
// may be flagged (counters 1 and 2).
//
// Every call takes the next sequence number from the cursor; that is all a
// call without flags does. A flagged one also stores seq<<2 | flags in slot
// seq mod n. The window is the calls numbered in (max(cur-n, start), cur],
// where start is the cursor when the period began, so calls evict old
// flags without touching their slots and no counter drifts under
// concurrent writers. Counts are taken by scanning.
type Count struct {
	pos   atomic.Uint64
	_     [56]byte // keep the written cursor off its readers' cache line
	start atomic.Uint64
	slots []atomic.Uint64
}

// NewCount returns an empty window of the last n calls; n must be positive.
func NewCount(n int) *Count { return &Count{slots: make([]atomic.Uint64, n)} }

// Add records a call; a and b are its flags (counters 1 and 2).
func (r *Count) Add(a, b bool) {
	seq := r.pos.Add(1)
	if f := flag(a, 1) | flag(b, 2); f != 0 {
		r.slots[seq%uint64(len(r.slots))].Store(seq<<2 | f)
	}
}

func flag(set bool, f uint64) uint64 {
	if set {
		return f
	}
	return 0
}

// Reset starts a new period: the window becomes empty.
func (r *Count) Reset() { r.start.Store(r.pos.Load()) }

// Sum returns the calls in the window and how many carry each flag.
func (r *Count) Sum() Counts {
	cur, lo := r.pos.Load(), r.start.Load()
	lo = max(lo, cur-min(cur, uint64(len(r.slots))))
	c := Counts{int(cur - lo)}
	for i := range r.slots {
		v := r.slots[i].Load()
		if seq := v >> 2; seq > lo && seq <= cur {
			c[1] += int(v & 1)
			c[2] += int(v >> 1 & 1)
		}
	}
	return c
}

// A Time bucket's key packs the generation (high 24 bits) above the
// bucket's time index (low 40 bits): both wrap, and are compared modulo
// their range.
const (
	idxBits = 40
	idxMask = 1<<idxBits - 1
	genMask = 1<<(64-idxBits) - 1
)

// Time is a window over time: n buckets of a width each, the bucket of
// time now (a reading of internal/mono) being (now-start)/width modulo n,
// where start is the reading the window was made at, so its buckets begin
// then (in a synctest bubble too, whose readings are exact but offset by
// the process's start).
// A bucket counts one period (generation) at a time: Add of a later one
// resets it, and Add of an earlier one, a straggler, leaves it alone. A
// call whose clock read is older than the bucket's lap counts in that lap,
// one width late. A Time is safe for concurrent use.
type Time struct {
	start   time.Duration
	width   uint64
	mu      sync.Mutex // serialises bucket resets
	buckets []bucket
}

type bucket struct {
	key atomic.Uint64
	n   [len(Counts{})]atomic.Uint32
}

// NewTime returns an empty window, made at start, of n buckets of width
// each; width and n must be positive.
func NewTime(start, width time.Duration, n int) *Time {
	return &Time{start: start, width: uint64(width), buckets: make([]bucket, n)}
}

// index returns the time index of now and its bucket.
func (w *Time) index(now time.Duration) (uint64, *bucket) {
	idx := uint64(now-w.start) / w.width // a reading before start (a stale one) counts from 2^64
	return idx, &w.buckets[idx%uint64(len(w.buckets))]
}

// Add adds d at time now to generation gen's counts.
func (w *Time) Add(gen uint64, now time.Duration, d Counts) {
	idx, b := w.index(now)
	if key := (gen&genMask)<<idxBits | idx&idxMask; b.key.Load() != key && !w.open(b, key) {
		return
	}
	for i, v := range d {
		if v != 0 {
			b.n[i].Add(uint32(v))
		}
	}
}

// open makes b count key's lap unless it counts a later generation (false)
// or a later lap of key's generation (true: counted there).
func (w *Time) open(b *bucket, key uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := b.key.Load()
	switch gens := (old>>idxBits - key>>idxBits) & genMask; {
	case old == 0: // never used
	case gens != 0:
		if gens < 1<<23 {
			return false // a later generation's
		}
	case (old-key)&idxMask < 1<<(idxBits-1):
		return true // key's lap, or a later one
	}
	for i := range b.n {
		b.n[i].Store(0)
	}
	b.key.Store(key)
	return true
}

// Sum returns generation gen's counts in the window that ends at now: the
// buckets of the last n laps, the current one included.
func (w *Time) Sum(gen uint64, now time.Duration) Counts {
	var c Counts
	idx, _ := w.index(now)
	for i := range w.buckets {
		b := &w.buckets[i]
		k := b.key.Load()
		if k>>idxBits != gen&genMask || (idx-k)&idxMask >= uint64(len(w.buckets)) {
			continue // another generation's, or older than the window (or newer: a stale clock)
		}
		for j := len(c) - 1; j >= 0; j-- {
			c[j] += int(b.n[j].Load())
		}
	}
	return c
}
