package ratelimit

import "math/bits"

// snapshot is an immutable open-addressing table from a key's 64-bit hash
// to its entry: what lookups of existing keys read without locking (see
// shard). Linear probing at a load of at most one half, so a lookup reads
// one or two slots; a Go map keyed by the hash costs twice as much here, as
// it hashes the hash again and probes a group. Of two keys with the same
// hash (odds 2^-64 per pair) it holds the first put, and the caller, which
// compares the entry's key, finds the other under the shard's lock.
type snapshot struct {
	mask  uint64 // len(slots) - 1; len(slots) is a power of two
	slots []slot
}

type slot struct {
	h uint64
	e *entry // nil: empty
}

// newSnapshot returns an empty snapshot with room for n entries.
func newSnapshot(n int) *snapshot {
	size := max(8, 1<<bits.Len(uint(2*n-1)))
	return &snapshot{mask: uint64(size - 1), slots: make([]slot, size)}
}

// put adds e under hash h, unless h is already there. Only while building.
func (t *snapshot) put(h uint64, e *entry) {
	for i := h >> shardBits; ; i++ {
		s := &t.slots[i&t.mask]
		if s.e == nil {
			s.h, s.e = h, e
			return
		}
		if s.h == h {
			return
		}
	}
}

// get returns the entry put under hash h, or nil. The low shardBits of h
// picked the shard, so the slot comes from the bits above them.
func (t *snapshot) get(h uint64) *entry {
	for i := h >> shardBits; ; i++ {
		s := &t.slots[i&t.mask]
		if s.e == nil || s.h == h {
			return s.e
		}
	}
}
