package breaker

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Outcome flags recorded per call in a window.
const (
	flagCounted = 1 << iota // the slot holds a call
	flagFailed              // the call failed with a route fault
	flagSlow                // the call took at least Config.SlowCall
)

// tally is what a window holds for one closed period: counted calls, of which
// failed and slow.
type tally struct {
	calls, failed, slow int
}

// tripReason evaluates the rate rules on t: it returns "failure rate",
// "slow call rate" or "" when neither trips. Pure.
func tripReason(c *config, t tally) string {
	if t.calls == 0 || t.calls < c.MinCalls {
		return ""
	}
	if float64(t.failed) >= c.FailureRate*float64(t.calls) {
		return "failure rate"
	}
	if c.SlowCall > 0 && float64(t.slow) >= c.SlowCallRate*float64(t.calls) {
		return "slow call rate"
	}
	return ""
}

// countRing is a count-based sliding window: the last n outcomes, lock-free.
// Each slot holds gen<<8 | flags, so a new closed period (a new generation)
// starts empty without resetting any slot, and no running counter can drift
// under concurrent writers: counts are taken by scanning, which only failures
// and slow calls do.
type countRing struct {
	pos   atomic.Uint32
	_     [60]byte // keep the written cursor off the state word's cache line
	n     uint32
	m     uint64 // Lemire's fastmod multiplier for n
	slots []atomic.Uint64
}

func newCountRing(n int) *countRing {
	r := &countRing{n: uint32(n), slots: make([]atomic.Uint64, n)}
	r.m = ^uint64(0)/uint64(n) + 1
	return r
}

// index returns i mod n without a division (Lemire, Kaser, Kurz: "Faster
// remainder by direct computation", 2019).
func (r *countRing) index(i uint32) uint32 {
	hi, _ := bits.Mul64(r.m*uint64(i), uint64(r.n))
	return uint32(hi)
}

func (r *countRing) record(gen uint64, flags uint64) {
	i := r.pos.Add(1)
	r.slots[r.index(i)].Store(gen<<8 | flags | flagCounted)
}

func (r *countRing) tally(gen uint64) tally {
	var t tally
	for i := range r.slots {
		v := r.slots[i].Load()
		if v&flagCounted == 0 || v>>8 != gen {
			continue
		}
		t.calls++
		if v&flagFailed != 0 {
			t.failed++
		}
		if v&flagSlow != 0 {
			t.slow++
		}
	}
	return t
}

// A time ring's bucket key packs the generation (low 24 bits) above the bucket's
// time index (low 40 bits).
const (
	idxBits = 40
	idxMask = 1<<idxBits - 1
	genMask = 1<<(64-idxBits) - 1
)

func bucketKey(gen uint64, idx int64) uint64 {
	return (gen&genMask)<<idxBits | uint64(idx)&idxMask
}

// timeRing is a time-based sliding window of len(buckets) buckets of width
// nanoseconds each. Recording into the current bucket is lock-free; the first
// call of a new bucket takes mu to reset it. A call racing with that reset may
// land in the new bucket instead of the old one, which moves an outcome by one
// bucket width and nothing more.
type timeRing struct {
	width   int64
	mu      sync.Mutex
	buckets []bucket
}

type bucket struct {
	key                  atomic.Uint64
	calls, failed, slows atomic.Uint32
}

func newTimeRing(window int64, n int) *timeRing {
	return &timeRing{width: window / int64(n), buckets: make([]bucket, n)}
}

func (r *timeRing) record(gen uint64, now int64, flags uint64) {
	idx := now / r.width
	key := bucketKey(gen, idx)
	b := &r.buckets[idx%int64(len(r.buckets))]
	if b.key.Load() != key {
		r.mu.Lock()
		old := b.key.Load()
		stale := old>>idxBits == gen&genMask && int64(old&idxMask) > idx&idxMask
		if stale {
			// This call read its clock before another call opened a newer lap of
			// the same bucket: its outcome is older than the window keeps.
			r.mu.Unlock()
			return
		}
		if old != key {
			b.calls.Store(0)
			b.failed.Store(0)
			b.slows.Store(0)
			b.key.Store(key)
		}
		r.mu.Unlock()
	}
	b.calls.Add(1)
	if flags&flagFailed != 0 {
		b.failed.Add(1)
	}
	if flags&flagSlow != 0 {
		b.slows.Add(1)
	}
}

func (r *timeRing) tally(gen uint64, now int64) tally {
	var t tally
	idx := now / r.width
	n := uint64(len(r.buckets))
	for i := range r.buckets {
		b := &r.buckets[i]
		k := b.key.Load()
		if k>>idxBits != gen&genMask {
			continue
		}
		if age := (uint64(idx) - k) & idxMask; age >= n {
			continue // older than the window (or from the future of a stale clock)
		}
		t.calls += int(b.calls.Load())
		t.failed += int(b.failed.Load())
		t.slow += int(b.slows.Load())
	}
	return t
}
