package breaker

import (
	"sync"
	"sync/atomic"
)

// Outcome flags recorded per call in a window.
const (
	flagFailed = 1 << iota // the call failed with a route fault
	flagSlow               // the call took at least Config.SlowCall
)

// tally is what a window holds for one closed period: counted calls, of which
// failed and slow.
type tally struct {
	calls, failed, slow int
}

// countRing is a count-based sliding window over the last n calls, lock-free.
//
// Every counted call takes the next sequence number from the cursor; that is
// all a successful call does. A failed or slow call also stores seq<<8 | flags
// in slot seq mod n. The window is the calls with sequence numbers in
// (max(cur-n, start), cur], where start is the cursor when the closed period
// began: its size is min(cur-start, n), and a slot counts only when its
// sequence number lies in that range, so successes evict old failures without
// touching their slots, a closed period starts empty without resetting any slot,
// and no running counter can drift under concurrent writers. Counts are taken
// by scanning, which only failures and slow calls do.
type countRing struct {
	pos   atomic.Uint64
	_     [56]byte // keep the written cursor off the state word's cache line
	start atomic.Uint64
	n     uint64
	slots []atomic.Uint64
}

func newCountRing(n int) *countRing {
	return &countRing{n: uint64(n), slots: make([]atomic.Uint64, n)}
}

// success records a counted call that neither failed nor was slow.
func (r *countRing) success() { r.pos.Add(1) }

// record records a counted call with the given flags.
func (r *countRing) record(flags uint64) {
	seq := r.pos.Add(1)
	if flags != 0 {
		r.slots[seq%r.n].Store(seq<<8 | flags)
	}
}

// reset starts a new closed period: the window becomes empty.
func (r *countRing) reset() { r.start.Store(r.pos.Load()) }

func (r *countRing) tally() tally {
	cur := r.pos.Load()
	lo := r.start.Load()
	if cur-lo > r.n {
		lo = cur - r.n
	}
	t := tally{calls: int(cur - lo)}
	for i := range r.slots {
		v := r.slots[i].Load()
		if seq := v >> 8; seq <= lo || seq > cur {
			continue
		}
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
		oldGen := old >> idxBits
		ahead := (old - key) & idxMask // how far the bucket's lap is past this call's, modulo 2^40
		stale := oldGen == gen&genMask && ahead != 0 && ahead < 1<<(idxBits-1)
		// A bucket of a later closed period (generations only grow; compared
		// modulo 2^24) is never reset by a call of an earlier one.
		later := old != 0 && (oldGen-gen)&genMask != 0 && (oldGen-gen)&genMask < 1<<23
		if stale || later {
			// This call read its clock before another call opened a newer lap of
			// the same bucket, or belongs to a closed period that is over: its
			// outcome is older than the window keeps.
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
