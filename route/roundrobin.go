package route

import "sync/atomic"

// RoundRobin is the [Strategy] that sends calls to the replicas in cyclic
// order, skipping unavailable ones. It ignores load and caches (seed 002: the
// classic balancer that prefix caches defeat). It has no settings.
type RoundRobin struct{}

// NewPicker returns RoundRobin's picker over replicas: one atomic add per pick,
// no allocation, never blocks.
func (RoundRobin) NewPicker(replicas []*Replica) Picker {
	return &rrPicker{replicas: replicas}
}

type rrPicker struct {
	replicas []*Replica
	next     atomic.Uint64
}

func (p *rrPicker) Pick(PickInfo) (PickResult, error) {
	n := uint64(len(p.replicas))
	start := p.next.Add(1) - 1
	for k := range n {
		i := int((start + k) % n)
		if p.replicas[i].Available() {
			return PickResult{Index: i}, nil
		}
	}
	return PickResult{Index: -1}, noReplica()
}

func (*rrPicker) tokenBlind() {}
