package retry

import (
	"math"
	"sync"
	"sync/atomic"
)

var posInf = math.Inf(1)

// unit is one retry token in the buckets' fixed-point arithmetic (10^9 per
// token), so every update is one atomic and decimal ratios such as 0.1 are
// exact: ten deposits of 0.1 make one token.
const unit = 1_000_000_000

// maxBurst is the largest Budget.Burst whose capacity fits in an int64 of
// 1/unit with room for one more deposit: about 4.6 billion retries.
const maxBurst = math.MaxInt64 / unit / 2

// depositOf converts a ratio in retries per request to 1/unit, rounding down
// so that the deposits of n requests never exceed ratio*n (the budget's
// bound is exact), except that a product within 10^-6 of an integer is taken as that
// integer: float64(0.3)*10^9 is 299999999.99999997, and 0.3 means 3/10. The
// deposit is capped at the capacity.
func depositOf(ratio float64, capacity int64) int64 {
	x := ratio * unit
	if x >= float64(capacity) {
		return capacity
	}
	if r := math.Round(x); math.Abs(x-r) < 1e-6 {
		return int64(r)
	}
	return int64(math.Floor(x))
}

type budgetKey struct{ dest, client string }

// bucket is one key's retry budget: level is the tokens left, in 1/unit.
type bucket struct {
	level  atomic.Int64
	used   atomic.Bool // touched since the last sweep
	dead   atomic.Bool // evicted from the map
	key    budgetKey
	pinned bool // see budgets.pin: never evicted, not counted in n
}

// deposit adds amt up to capacity. A full bucket is only read, so a busy key
// whose budget is full costs no write to a shared cache line.
func (b *bucket) deposit(amt, capacity int64) {
	if amt == 0 {
		return
	}
	for {
		v := b.level.Load()
		if v >= capacity {
			return
		}
		if b.level.CompareAndSwap(v, min(v+amt, capacity)) {
			return
		}
	}
}

// withdrawAt takes one token when at least need (<= unit) is left, or
// reports false; below one token, the level goes below zero.
func (b *bucket) withdrawAt(need int64) bool {
	for {
		v := b.level.Load()
		if v < need {
			return false
		}
		if b.level.CompareAndSwap(v, v-unit) {
			return true
		}
	}
}

// budgets holds buckets keyed by (destination, client key): a Retrier has
// one for its clients and one, keyed by (destination, ""), for its
// destinations. Lookups are lock-free, in a sync.Map. Inserting keys past
// maxKeys sweeps the map under mu, once per maxKeys/16 such keys.
type budgets struct {
	depositAmt int64 // per new request, in 1/unit
	capacity   int64 // in 1/unit
	maxKeys    int64
	m          sync.Map // budgetKey -> *bucket
	n          atomic.Int64
	overCap    atomic.Int64 // new keys over maxKeys since the last sweep
	mu         sync.Mutex   // serialises sweeps
	overflow   *bucket
	take       sync.Mutex // serialises withdrawals from destination buckets; see spend
}

func newBudgets(ratio float64, burst, maxKeys int) *budgets {
	bs := &budgets{
		capacity: int64(burst) * unit,
		maxKeys:  int64(maxKeys),
	}
	bs.depositAmt = depositOf(ratio, bs.capacity)
	bs.overflow = bs.newBucket(budgetKey{})
	return bs
}

func (bs *budgets) newBucket(k budgetKey) *bucket {
	b := &bucket{key: k}
	b.level.Store(bs.capacity)
	b.used.Store(true)
	return b
}

// get returns the bucket of (dest, client), creating it full if needed.
// For an existing key it does not allocate.
func (bs *budgets) get(dest, client string) *bucket {
	if b := bs.find(dest, client); b != nil {
		return b
	}
	return bs.insert(budgetKey{dest, client})
}

// forDeposit returns the bucket a request of (dest, client) deposits in:
// the one the budgets hold; else a new one while they have room for it
// (maxKeys); else nil. A key without a bucket has a full one, which a
// deposit would leave full, so past maxKeys a request whose client has no
// bucket changes nothing and makes none: only a retry does, sweeping as
// get does. A million clients that do not retry then cost the budgets a
// lookup each, no allocation and no sweep.
func (bs *budgets) forDeposit(dest, client string) *bucket {
	if b := bs.find(dest, client); b != nil {
		return b
	}
	if bs.n.Load() >= bs.maxKeys {
		return nil
	}
	return bs.insert(budgetKey{dest, client})
}

// find returns the bucket of (dest, client), or nil when the budgets hold
// none, marking it used; it never allocates.
func (bs *budgets) find(dest, client string) *bucket {
	v, ok := bs.m.Load(budgetKey{dest, client})
	if !ok {
		return nil
	}
	b := v.(*bucket)
	if !b.used.Load() {
		b.used.Store(true)
	}
	return b
}

// pin returns the bucket of k, made full and kept for the budgets' life:
// a sweep never evicts it and it is not counted against maxKeys, so that a
// Retrier holds it from construction and its requests find it without a
// lookup (see Retrier.home). Call it before the budgets are shared.
func (bs *budgets) pin(k budgetKey) *bucket {
	b := bs.newBucket(k)
	b.pinned = true
	bs.m.Store(k, b)
	return b
}

func (bs *budgets) insert(k budgetKey) *bucket {
	nb := bs.newBucket(k)
	if v, loaded := bs.m.LoadOrStore(k, nb); loaded {
		return v.(*bucket)
	}
	if bs.n.Add(1) <= bs.maxKeys {
		return nb
	}
	// Sweep at most once per maxKeys/16 keys over the cap, so a flood of new
	// keys costs O(16) per key amortised, not a full scan each.
	if bs.overCap.Add(1) >= max(bs.maxKeys/16, 1) {
		bs.overCap.Store(0)
		bs.sweep(k)
	}
	if bs.n.Load() <= bs.maxKeys {
		return nb
	}
	// Nothing could be evicted: the new key shares the overflow bucket.
	bs.evict(k, nb)
	nb.dead.Store(true) // also when a sweep evicted it first
	return bs.overflow
}

// sweep evicts, except keep, every bucket that is full (the same as a new one)
// or was not used since the previous sweep (an idle key: it comes back full),
// and marks the survivors unused.
func (bs *budgets) sweep(keep budgetKey) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.m.Range(func(k, v any) bool {
		b := v.(*bucket)
		if b.key == keep || b.pinned {
			return true
		}
		if b.level.Load() >= bs.capacity || !b.used.Load() {
			bs.evict(k, b)
			return true
		}
		b.used.Store(false)
		return true
	})
}

// evict removes b, k's bucket, from the map, marked dead and unused,
// unless another sweep removed it first.
func (bs *budgets) evict(k any, b *bucket) {
	if _, ok := bs.m.LoadAndDelete(k); ok {
		b.dead.Store(true)
		b.used.Store(false)
		bs.n.Add(-1)
	}
}

// spend takes one token from client bucket c and one from destination bucket
// d (nil: no destination budget), or takes none and names the budget that had
// less than one: "destination" or "client". Withdrawals from destination
// buckets are serialised by dests.take, and deposits only raise a level, so d
// keeps the token it was found with until spend takes it: the client's token
// is taken only when the destination's is sure, and a refused retry consumes
// nothing, not even for a moment. An empty destination refuses before the
// lock, so an outage's refusals stay lock-free.
func spend(dests *budgets, c, d *bucket) string { return spendAt(dests, c, d, unit) }

// spendAt is spend for buckets that need only need (<= unit) to give a
// token: a fail-open share's (see Retrier.sharedSpend).
func spendAt(dests *budgets, c, d *bucket, need int64) string {
	if d == nil {
		return withdrawClient(c, need)
	}
	if d.level.Load() < need {
		return "destination"
	}
	dests.take.Lock()
	defer dests.take.Unlock()
	if d.level.Load() < need {
		return "destination"
	}
	if why := withdrawClient(c, need); why != "" {
		return why
	}
	d.level.Add(-unit)
	return ""
}

// withdrawClient takes a token from client bucket c (see withdrawAt), or
// names the client's budget as the one that refused.
func withdrawClient(c *bucket, need int64) string {
	if c.withdrawAt(need) {
		return ""
	}
	return "client"
}

// level returns the tokens left for (dest, client) without creating the key.
func (bs *budgets) level(dest, client string) float64 {
	v, ok := bs.m.Load(budgetKey{dest, client})
	if !ok {
		return float64(bs.capacity) / unit
	}
	return float64(v.(*bucket).level.Load()) / unit
}
