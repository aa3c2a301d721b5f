package route

import (
	"hash/maphash"

	"github.com/portico-llm/portico"
)

// block is one fixed-size block of a prompt: the chain hash of the prompt up to
// and including the block, and the prompt's length in bytes at the block's end.
type block struct {
	hash uint64
	end  int
}

// hashSeed is the process's seed for block hashes; the index lives in memory
// only, so a per-process seed is enough and defeats crafted collisions.
var hashSeed = maphash.MakeSeed()

// hashPrompt appends to dst the chain of block hashes of req's prompt, each
// message's role mixed in first and each text cut into blocks of
// blockBytes, and returns it: block i's hash covers the prompt up to its
// end, so two prompts share it exactly when they share that prefix (up to
// 64-bit collisions).
func hashPrompt(req *portico.Request, blockBytes int, dst []block) []block {
	var h uint64
	end := 0
	add := func(s string) {
		for off := 0; off < len(s); off += blockBytes {
			c := s[off:min(off+blockBytes, len(s))]
			h = splitmix64(h ^ maphash.String(hashSeed, c))
			end += len(c)
			dst = append(dst, block{hash: h, end: end})
		}
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		h = splitmix64(h ^ maphash.String(hashSeed, string(m.Role)) ^ 0x51ed)
		for _, p := range m.Content {
			if p.Kind == portico.PartImage {
				add(p.ImageURL)
			} else {
				add(p.Text)
			}
		}
		for _, tc := range m.ToolCalls {
			add(tc.Name)
			add(string(tc.Arguments))
		}
		if m.ToolCallID != "" {
			h = splitmix64(h ^ maphash.String(hashSeed, m.ToolCallID))
		}
	}
	return dst
}

// blockIndex is one replica's client-side record of the prompt blocks recently
// sent to it: an LRU of at most max block hashes, each with the time it was
// last sent and how many calls sent it within about the window H. Nodes live
// in one slice (no per-node allocation); the map finds them by hash. Not safe
// for concurrent use.
type blockIndex struct {
	max        int
	window     int64 // H, nanoseconds: the width of the use-count epochs
	m          map[uint64]int32
	nodes      []bnode
	head, tail int32 // most and least recently used; -1 when empty
	free       int32 // free list through next; -1 when empty
}

// bnode is one indexed block. Its uses are counted per epoch of width H
// (epoch = floor(t / H), t a mono.Now reading in ns): uses in the node's epoch and prevUses in the one
// before, so that a block's weight in E_g is the calls that sent it within
// about the last H (a sliding-window counter), not since it was first sent.
type bnode struct {
	hash       uint64
	seen       int64 // the mono.Now reading (ns) of the last send
	epoch      int64 // the epoch of uses
	bytes      int32 // the block's size
	uses       int32 // calls that sent it in epoch
	prevUses   int32 // calls that sent it in epoch-1
	prev, next int32
	keep       bool // scratch mark of evictionCost
}

func newBlockIndex(maxBlocks int, window int64) blockIndex {
	return blockIndex{max: maxBlocks, window: max(window, 1), m: make(map[uint64]int32), head: -1, tail: -1, free: -1}
}

func (x *blockIndex) len() int { return len(x.m) }

// has reports whether hash was sent at or after cutoff.
func (x *blockIndex) has(hash uint64, cutoff int64) bool {
	i, ok := x.m[hash]
	return ok && x.nodes[i].seen >= cutoff
}

func (x *blockIndex) unlink(i int32) {
	n := &x.nodes[i]
	if n.prev >= 0 {
		x.nodes[n.prev].next = n.next
	} else {
		x.head = n.next
	}
	if n.next >= 0 {
		x.nodes[n.next].prev = n.prev
	} else {
		x.tail = n.prev
	}
}

func (x *blockIndex) pushFront(i int32) {
	n := &x.nodes[i]
	n.prev, n.next = -1, x.head
	if x.head >= 0 {
		x.nodes[x.head].prev = i
	}
	x.head = i
	if x.tail < 0 {
		x.tail = i
	}
}

// removeTail forgets the least recently used block.
func (x *blockIndex) removeTail() {
	i := x.tail
	x.unlink(i)
	delete(x.m, x.nodes[i].hash)
	x.nodes[i].next = x.free
	x.free = i
}

// expire forgets every block last sent before cutoff (outside the window H).
func (x *blockIndex) expire(cutoff int64) {
	for x.tail >= 0 && x.nodes[x.tail].seen < cutoff {
		x.removeTail()
	}
}

// touch records that a block of size bytes with this hash was sent at now, in
// epoch now/H (passed in, computed once per call), evicting the least
// recently used block when the index is full.
func (x *blockIndex) touch(hash uint64, bytes int, now, epoch int64) {
	if i, ok := x.m[hash]; ok {
		x.nodes[i].use(now, epoch)
		x.unlink(i)
		x.pushFront(i)
		return
	}
	if len(x.m) >= x.max {
		x.removeTail()
	}
	i := x.node()
	x.nodes[i] = bnode{hash: hash, seen: now, epoch: epoch, bytes: int32(bytes), uses: 1}
	x.m[hash] = i
	x.pushFront(i)
}

// use counts a send of n at now, in epoch, turning its counts over when
// epoch is a new one.
func (n *bnode) use(now, epoch int64) {
	n.seen = now
	if n.epoch != epoch {
		n.prevUses = 0
		if n.epoch == epoch-1 {
			n.prevUses = n.uses
		}
		n.uses, n.epoch = 0, epoch
	}
	n.uses++
}

// node returns a free node's position: one off the free list, else a new one.
func (x *blockIndex) node() int32 {
	if i := x.free; i >= 0 {
		x.free = x.nodes[i].next
		return i
	}
	x.nodes = append(x.nodes, bnode{})
	return int32(len(x.nodes) - 1)
}

// evictionCost is Preble's E_g before dividing by the window's calls: the
// sum, over the k least recently used blocks a full index would evict at
// now (passing over keep, the call's own cached prefix, which it
// refreshes first), of bytes times the calls that sent it within H.
func (x *blockIndex) evictionCost(k int, keep []block, now int64) float64 {
	epoch := floorDiv(now, x.window)
	left := 1 - float64(now-epoch*x.window)/float64(x.window) // of epoch-1, still in the window
	x.mark(keep, true)
	s := 0.0
	for i := x.tail; i >= 0 && k > 0; i = x.nodes[i].prev {
		if n := &x.nodes[i]; !n.keep {
			s += float64(n.bytes) * n.recent(epoch, left)
			k--
		}
	}
	x.mark(keep, false)
	return s
}

// mark sets the keep flag of the indexed blocks of bs.
func (x *blockIndex) mark(bs []block, keep bool) {
	for _, b := range bs {
		if i, ok := x.m[b.hash]; ok {
			x.nodes[i].keep = keep
		}
	}
}

// recent is n's calls within the window at epoch, left of epoch-1 in it.
func (n *bnode) recent(epoch int64, left float64) float64 {
	switch n.epoch {
	case epoch:
		return float64(n.uses) + left*float64(n.prevUses)
	case epoch - 1:
		return left * float64(n.uses)
	}
	return 0
}

// toFront moves the block with this hash, if indexed, to the most recently
// used end without counting a use.
func (x *blockIndex) toFront(hash uint64) {
	if i, ok := x.m[hash]; ok {
		x.unlink(i)
		x.pushFront(i)
	}
}

// longest returns how many leading blocks of bs the index holds (sent at or
// after cutoff), by binary search: blocks of one prompt are touched last block
// first, so an earlier block is never older, nor evicted sooner, than a later
// one, and presence is monotone along a chain.
func (x *blockIndex) longest(bs []block, cutoff int64) int {
	lo, hi := 0, len(bs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.has(bs[mid].hash, cutoff) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// loadRing is a replica's recent load, Preble's Q_g, over a sliding window cut
// into loadSlots buckets: the work (in tokens) and number of calls placed.
type loadRing struct {
	slot [loadSlots]struct {
		id   int64
		work float64
		n    int
	}
}

const loadSlots = 16

func (l *loadRing) add(now, width int64, work float64) {
	id := floorDiv(now, width)
	s := &l.slot[((id%loadSlots)+loadSlots)%loadSlots]
	if s.id != id {
		s.id, s.work, s.n = id, 0, 0
	}
	s.work += work
	s.n++
}

// sum returns the work and calls placed in the last loadSlots buckets.
func (l *loadRing) sum(now, width int64) (float64, int) {
	id := floorDiv(now, width)
	w, n := 0.0, 0
	for i := range l.slot {
		s := &l.slot[i]
		if s.id > id-loadSlots && s.id <= id {
			w += s.work
			n += s.n
		}
	}
	return w, n
}

// floorDiv is a / b rounded down, for b > 0: readings of mono.Now may be
// negative (inside a synctest bubble), and an epoch or a bucket is as wide
// on either side of 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
