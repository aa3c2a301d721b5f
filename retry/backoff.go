package retry

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// maxCeilings bounds the precomputed schedule; retries beyond it reuse the last
// ceiling, which is MaxDelay long before (2^63 ns overflows after 63 doublings).
const maxCeilings = 64

// ceilings returns the ceilings c_1..c_n, c_i = min(limit, base*2^(i-1)), computed
// once per Retrier by cenkalti/backoff/v5's ExponentialBackOff with no
// randomization, multiplier 2 and MaxInterval limit. The jitter is drawn by the
// Retrier itself (backoff's own randomization is "equal jitter"-like, ±50%
// around the interval, which the AWS study finds the worst jittered variant),
// and the schedule is shared read-only so that no call allocates a BackOff.
func ceilings(base, limit time.Duration, n int) []time.Duration {
	n = min(max(n, 1), maxCeilings)
	eb := &backoff.ExponentialBackOff{
		InitialInterval:     base,
		RandomizationFactor: 0,
		Multiplier:          2,
		MaxInterval:         limit,
	}
	eb.Reset()
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = min(eb.NextBackOff(), limit)
	}
	return out
}

// ceiling returns retry i's ceiling, i >= 1.
func (r *Retrier) ceiling(i int) time.Duration {
	return r.ceil[min(i, len(r.ceil))-1]
}

// draw returns the uniform draw in [0, 1) a jittered Schedule takes, 0
// for the others.
func (r *Retrier) draw() float64 {
	if r.kind == FullJitter || r.kind == DecorrelatedJitter {
		return r.rand()
	}
	return 0
}

// backoffDelay returns the wait before retry i (i >= 1) for a uniform draw u in
// [0, 1), given the previous wait prev of the same call (for decorrelated
// jitter; BaseDelay before the first retry). It is pure: the caller draws u.
func (r *Retrier) backoffDelay(i int, prev time.Duration, u float64) time.Duration {
	switch r.kind {
	case FullJitter:
		return time.Duration(u * float64(r.ceiling(i)))
	case DecorrelatedJitter:
		return r.decorrelated(prev, u)
	case Exponential:
		return r.ceiling(i)
	}
	return 0
}

// decorrelated is DecorrelatedJitter's wait for the draw u after the wait
// prev: min(MaxDelay, uniform[BaseDelay, 3*prev)).
func (r *Retrier) decorrelated(prev time.Duration, u float64) time.Duration {
	hi := 3 * prev
	if hi < max(r.base, prev) { // overflow or a prev below base
		hi = r.max
	}
	return min(r.base+time.Duration(u*float64(hi-r.base)), r.max)
}
