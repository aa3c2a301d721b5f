package route

import (
	"math/bits"
	"sync/atomic"
)

// RoundRobin is the [Strategy] that sends calls to the replicas in cyclic
// order, skipping unavailable ones. It ignores load and caches: the classic
// balancer that prefix caches defeat. It has no settings.
type RoundRobin struct{}

// NewPicker returns RoundRobin's picker over replicas: one atomic add per pick,
// no division, no allocation, never blocks.
func (RoundRobin) NewPicker(replicas []*Replica) Picker {
	n := uint64(max(len(replicas), 1))
	return &rrPicker{replicas: replicas, n: n, m: ^uint64(0)/n + 1}
}

type rrPicker struct {
	replicas []*Replica
	n, m     uint64 // len(replicas) and its fastmod multiplier
	next     atomic.Uint32
}

// fastmod returns a % n without a division, given m = 2^64/n rounded up
// (Lemire, Kaser and Kurz, "Faster Remainder by Direct Computation", 2019):
// exact for every 32-bit a and n.
func fastmod(a uint32, m, n uint64) uint64 {
	hi, _ := bits.Mul64(m*uint64(a), n)
	return hi
}

func (p *rrPicker) Pick(PickInfo) (PickResult, error) {
	// The 32-bit counter wraps every 2^32 picks, where the cycle skips at most
	// n-1 replicas once (none when n divides 2^32).
	i := int(fastmod(p.next.Add(1)-1, p.m, p.n))
	for range p.replicas {
		if p.replicas[i].Available() {
			return PickResult{Index: i}, nil
		}
		if i++; i == len(p.replicas) {
			i = 0
		}
	}
	return PickResult{Index: -1}, noReplica(p.replicas)
}

func (*rrPicker) tokenBlind() {}
