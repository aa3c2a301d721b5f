// Package slots keeps a fixed set of places, each held by one goroutine at
// a time, where a hot path finds state reused from one call to the next
// without sync.Pool's Get and Put: a claim is one compare-and-swap, a
// release one store, and the state stays in place, so that the holder
// writes only what changed since the last call (each pointer written to
// the heap is a write barrier while the garbage collector marks).
package slots

import (
	"sync/atomic"
	"unsafe"
)

// The words of a free slot and of a held one; a holder may store any other
// value in its slot's word, which is then held as well.
const (
	Free int64 = 0
	Held int64 = 1
)

// N is the number of slots in a [Table]; probes is how many a claim tries.
const (
	N      = 64
	probes = 4
)

// Slot is one place of a [Table]. Word is [Free], [Held] or a value its
// holder stored; V is the state its holders reuse, replaced only by the
// holder; Holders is for the holders to count themselves (written by the
// holder alone, ordered by the claim). It takes a cache line.
type Slot[T any] struct {
	Word    atomic.Int64
	V       atomic.Pointer[T]
	Holders uint32
	_       [44]byte
}

// Table is N slots. Its zero value is ready: every slot free, with no
// state. It is safe for concurrent use.
type Table[T any] [N]Slot[T]

// Claim returns a free slot of t, now [Held], or nil when the ones it
// probed were taken. The probe starts at a place given by the caller's
// stack, so that the calls of one goroutine reuse one slot.
func (t *Table[T]) Claim() *Slot[T] {
	var here byte
	i := uint(uintptr(unsafe.Pointer(&here))>>11) * 0x9E3779B1 >> 7
	for k := range uint(probes) {
		sl := &t[(i+k)%N]
		if sl.Word.Load() == Free && sl.Word.CompareAndSwap(Free, Held) {
			return sl
		}
	}
	return nil
}

// Release frees sl, which its caller holds.
func (sl *Slot[T]) Release() { sl.Word.Store(Free) }
