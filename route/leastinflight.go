package route

import "sync/atomic"

// LeastInFlight is the [Strategy] that sends each call to the less busy of two
// replicas drawn at random: the power of two random choices (Mitzenmacher),
// which keeps the maximum load close to the least-loaded choice's without
// scanning every replica or herding all callers onto the same idle one. When a
// drawn replica is unavailable the other is used; when both are, it falls back
// to scanning for the available replica with the fewest calls in flight (ties:
// fewest picks, then lowest index). Like round robin it ignores caches.
type LeastInFlight struct {
	// Seed seeds the picker's random draws, for reproducible picks; 0 is a
	// valid seed. The draws come from a lock-free counter-based generator
	// (SplitMix64), so concurrent picks never contend on a lock.
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
	n := uint64(len(p.replicas))
	if n == 1 {
		if p.replicas[0].Available() {
			return PickResult{Index: 0}, nil
		}
		return PickResult{Index: -1}, noReplica()
	}
	x := splitmix64(p.seed ^ p.ctr.Add(1))
	i := (x & 0xffffffff) % n
	j := (x >> 32) % (n - 1)
	if j >= i {
		j++ // distinct from i, uniform over the others
	}
	a, b := p.replicas[i], p.replicas[j]
	okA, okB := a.Available(), b.Available()
	switch {
	case okA && okB:
		if b.inFlight.Load() < a.inFlight.Load() {
			return PickResult{Index: int(j)}, nil
		}
		return PickResult{Index: int(i)}, nil
	case okA:
		return PickResult{Index: int(i)}, nil
	case okB:
		return PickResult{Index: int(j)}, nil
	}
	if k := leastUsed(p.replicas); k >= 0 {
		return PickResult{Index: k}, nil
	}
	return PickResult{Index: -1}, noReplica()
}

func (*p2cPicker) tokenBlind() {}
