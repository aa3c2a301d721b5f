package route

import (
	"math/rand/v2"
	"sync/atomic"
)

// LeastInFlight is the [Strategy] that sends each call to the less busy of two
// replicas drawn at random: the power of two random choices (Mitzenmacher),
// which keeps the maximum load close to the least-loaded choice's without
// scanning every replica or herding all callers onto the same idle one. When a
// drawn replica is unavailable the other is used; when both are, it falls back
// to scanning for the available replica with the fewest calls in flight (ties:
// fewest picks, then lowest index). Like round robin it ignores caches.
type LeastInFlight struct {
	// Seed, when non-zero, makes the picker's random draws reproducible: they
	// come from a counter-based generator (SplitMix64 over one atomic
	// counter), so the same Seed gives the same sequence of draws. Zero (the
	// default) draws from the runtime's per-thread generator (math/rand/v2's
	// top-level functions), which shares no state between concurrent picks
	// and so scales better on many cores.
	Seed uint64
}

// NewPicker returns the power-of-two-choices picker over replicas: no lock, no
// allocation, never blocks.
func (s LeastInFlight) NewPicker(replicas []*Replica) Picker {
	return &p2cPicker{replicas: replicas, seed: s.Seed}
}

type p2cPicker struct {
	replicas []*Replica
	seed     uint64
	ctr      atomic.Uint64
}

// splitmix64 is SplitMix64's output function (Steele, Lea and Flood, 2014).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (p *p2cPicker) Pick(PickInfo) (PickResult, error) {
	if len(p.replicas) > 1 {
		return picked(p.replicas, p.pickOfTwo())
	}
	return picked(p.replicas, leastUsed(p.replicas)) // one replica, or none
}

// pickOfTwo returns the available one of two drawn replicas with fewer
// calls in flight, else the least used replica (-1: none available).
func (p *p2cPicker) pickOfTwo() int {
	i, j := p.draw(uint64(len(p.replicas)))
	a, b := p.replicas[i], p.replicas[j]
	okA, okB := a.Available(), b.Available()
	switch {
	case okB && (!okA || b.InFlight() < a.InFlight()):
		return j
	case okA:
		return i
	}
	return leastUsed(p.replicas)
}

// draw returns two distinct indexes below n, n >= 2, uniform.
func (p *p2cPicker) draw(n uint64) (int, int) {
	var x uint64
	if p.seed != 0 {
		x = splitmix64(p.seed ^ p.ctr.Add(1))
	} else {
		x = rand.Uint64()
	}
	// Multiply-shift range reduction (Lemire, 2019) instead of two divisions:
	// each index is uniform up to a bias of n/2^32.
	i := (x & 0xffffffff) * n >> 32
	j := (x >> 32) * (n - 1) >> 32
	if j >= i {
		j++ // distinct from i, uniform over the others
	}
	return int(i), int(j)
}

func (*p2cPicker) tokenBlind() {}
