package hedge

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// The sketch's buckets: 8 per power of two (each 9% wide) from 1 µs
// (2^10 ns) to about 73 minutes (2^42 ns); shorter latencies count in the
// first bucket, longer ones in the last.
const (
	subBits    = 3
	subBuckets = 1 << subBits
	minExp     = 10
	maxExp     = 42
	numBuckets = (maxExp - minExp) * subBuckets
)

// halfSamples is how many samples each half of a Latency holds before the
// halves turn over: the quantile is read over the last 1,000 to 2,000.
const halfSamples = 1000

// minSamples is the least number of samples a Latency needs before
// [Latency.Quantile] answers.
const minSamples = 50

// Latency is a bounded sketch of a destination's latencies, for the
// quantile a [Hedger] waits before hedging: a log-linear histogram (8
// buckets per power of two from 1 µs to 73 min, so a quantile is known to
// within 9%) in two halves of 1,000 samples, the older dropped when the
// newer fills, so it follows a drifting destination and holds 4 KiB
// whatever it sees. The zero value is ready; it is safe for concurrent use,
// and Add costs three atomic operations.
type Latency struct {
	cur    atomic.Uint32 // the half being filled: 0 or 1
	counts [2]atomic.Int64
	halves [2][numBuckets]atomic.Int64
	mu     sync.Mutex // serialises the turnover
	// The last quantile computed, for quantile: q's bits, the latency (0: not
	// known), and the number of samples added when it was computed.
	added           atomic.Int64
	cacheQ, cacheAt atomic.Int64
	cacheD          atomic.Int64
}

// recompute is how many samples may be added before quantile computes a
// cached quantile again.
const recompute = 16

// quantile is Quantile, computed at most once per 16 samples for the same q:
// the Hedger asks it for every request it may hedge.
func (l *Latency) quantile(q float64) (time.Duration, bool) {
	n := l.added.Load()
	if int64(math.Float64bits(q)) == l.cacheQ.Load() && n-l.cacheAt.Load() < recompute {
		if d := l.cacheD.Load(); d > 0 {
			return time.Duration(d), true
		}
		if n < minSamples {
			return 0, false
		}
	}
	d, ok := l.Quantile(q)
	l.cacheD.Store(int64(d))
	l.cacheAt.Store(n)
	l.cacheQ.Store(int64(math.Float64bits(q)))
	return d, ok
}

// bucketOf returns the bucket of latency d: its power of two and the next
// subBits bits below the leading one. Pure.
func bucketOf(d time.Duration) int {
	if d < 1<<minExp {
		return 0
	}
	v := uint64(d)
	exp := bits.Len64(v) - 1 // 2^exp <= v < 2^(exp+1)
	if exp >= maxExp {
		return numBuckets - 1
	}
	sub := int(v>>(exp-subBits)) & (subBuckets - 1)
	return (exp-minExp)*subBuckets + sub
}

// upper returns the least latency above bucket i: the bound a quantile in
// that bucket is reported as. Pure.
func upper(i int) time.Duration {
	exp := minExp + i/subBuckets
	sub := i % subBuckets
	return time.Duration((uint64(subBuckets+sub+1) << exp) >> subBits)
}

// Add records a latency.
func (l *Latency) Add(d time.Duration) {
	h := l.cur.Load()
	l.halves[h][bucketOf(d)].Add(1)
	l.added.Add(1)
	if l.counts[h].Add(1) == halfSamples {
		l.turn(h)
	}
}

// turn makes the older half, cleared, the one being filled.
func (l *Latency) turn(full uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur.Load() != full {
		return
	}
	old := 1 - full
	for i := range l.halves[old] {
		l.halves[old][i].Store(0)
	}
	l.counts[old].Store(0)
	l.cur.Store(old)
}

// Quantile returns the latency below which a fraction q, in (0, 1), of the
// recorded latencies fall, rounded up to its bucket's upper bound (at most
// 9% above), and false while fewer than 50 latencies are recorded.
func (l *Latency) Quantile(q float64) (time.Duration, bool) {
	var counts [numBuckets]int64
	n := l.sum(&counts)
	if n < minSamples {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(n)))
	seen := int64(0)
	for i, c := range counts {
		if seen += c; seen >= rank {
			return upper(i), true
		}
	}
	return upper(numBuckets - 1), true
}

// sum adds both halves' counts into counts and returns their total.
func (l *Latency) sum(counts *[numBuckets]int64) int64 {
	n := int64(0)
	for h := range l.halves {
		for i := range counts {
			c := l.halves[h][i].Load()
			counts[i] += c
			n += c
		}
	}
	return n
}
