package ratelimit

import "math/bits"

// snapshot is an immutable open-addressing table from a key to its entry:
// what lookups of existing keys read without locking (see shard). Linear
// probing on the key's 64-bit hash at a load of at most one half, so a
// lookup reads one or two slots. A slot is the entry's pointer alone, 8
// bytes, and a parallel array holds a byte of each slot's hash (its tag, as
// in Swiss tables), so that a probe of another key's slot reads no entry
// but once in 128 probes, and the two arrays take 9 bytes a slot: at a
// million keys 18 MiB, where slots of hash and pointer took 32. A Go map
// keyed by the hash costs twice as much here, as it hashes the hash again.
type snapshot struct {
	mask  uint64   // len(slots) - 1; len(slots) is a power of two
	tags  []uint8  // tag(h) of the slot's entry; 0: empty
	slots []*entry // nil: empty
}

// tag is the byte of hash h a slot keeps: its top 7 bits with the high bit
// set, so that no tag is 0 (empty). The low bits of h pick the shard and
// the slot.
func tag(h uint64) uint8 { return uint8(h>>57) | 0x80 }

// newSnapshot returns an empty snapshot with room for n entries.
func newSnapshot(n int) *snapshot {
	size := max(8, 1<<bits.Len(uint(2*n-1)))
	return &snapshot{mask: uint64(size - 1), tags: make([]uint8, size), slots: make([]*entry, size)}
}

// put adds e, whose key hashes to h; e's key must not be there yet. Only
// while building.
func (t *snapshot) put(h uint64, e *entry) {
	for i := h >> shardBits; ; i++ {
		if j := i & t.mask; t.tags[j] == 0 {
			t.tags[j], t.slots[j] = tag(h), e
			return
		}
	}
}

// get returns the entry of k, whose hash is h, or nil. The low shardBits of
// h picked the shard, so the slot comes from the bits above them.
func (t *snapshot) get(h uint64, k key) *entry {
	g := tag(h)
	for i := h >> shardBits; ; i++ {
		j := i & t.mask
		switch t.tags[j] {
		case 0:
			return nil
		case g:
			if e := t.slots[j]; e.k == k {
				return e
			}
		}
	}
}
