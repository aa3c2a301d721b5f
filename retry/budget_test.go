package retry

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/portico-llm/portico"
)

func TestBucketDepositWithdraw(t *testing.T) {
	bs := newBudgets(0.1, 2, 10)
	b := bs.get("m", "c")
	for i, want := range []bool{true, true, false} {
		if got := b.withdrawAt(unit); got != want {
			t.Fatalf("withdrawal %d from a burst-2 bucket = %v, want %v", i+1, got, want)
		}
	}
	for range 9 {
		b.deposit(bs.depositAmt, bs.capacity)
	}
	if b.withdrawAt(unit) {
		t.Errorf("withdraw after 9 deposits of 0.1 = true, want false")
	}
	b.deposit(bs.depositAmt, bs.capacity)
	if !b.withdrawAt(unit) {
		t.Errorf("withdraw after 10 deposits of 0.1 = false, want true")
	}
	for range 1000 {
		b.deposit(bs.depositAmt, bs.capacity)
	}
	if got := b.level.Load(); got != bs.capacity {
		t.Errorf("level after many deposits = %d, want capacity %d", got, bs.capacity)
	}
}

// Keys are kept per (destination, client): one client in an error loop empties
// only its own budget.
func TestBudgetIsolatesClients(t *testing.T) {
	base := failing(transient())
	r := mustNew(t, Config{Budget: Budget{NoRefill: true, Burst: 4}, Backoff: Backoff{Schedule: Immediate}})
	m := r.Wrap(base)
	loop := userReq.Clone()
	loop.Identity.ClientKey = "looping"
	for range 10 {
		m.Generate(context.Background(), loop)
	}
	if got := r.BudgetLevel("m", "looping"); got != 0 {
		t.Errorf("BudgetLevel(m, looping) = %v, want 0", got)
	}
	other := userReq.Clone()
	other.Identity.ClientKey = "quiet"
	before := base.calls()
	m.Generate(context.Background(), other)
	if got := base.calls() - before; got != 3 {
		t.Errorf("attempts for another client = %d, want 3 (its budget is intact)", got)
	}
	otherModel := loop.Clone()
	otherModel.Model = "m2"
	before = base.calls()
	m.Generate(context.Background(), otherModel)
	if got := base.calls() - before; got != 3 {
		t.Errorf("attempts for the same client on another model = %d, want 3", got)
	}
	// A configured Destination replaces the model name as the key.
	r2 := mustNew(t, Config{Destination: "pool", Budget: Budget{NoRefill: true, Burst: 1}, Backoff: Backoff{Schedule: Immediate}})
	r2.Wrap(base).Generate(context.Background(), otherModel)
	if got := r2.BudgetLevel("pool", "looping"); got != 0 {
		t.Errorf("BudgetLevel(pool, looping) = %v, want 0", got)
	}
	if got := mustNew(t, Config{Budget: Budget{Off: true}}).BudgetLevel("m", ""); !math.IsInf(got, 1) {
		t.Errorf("BudgetLevel with the budget off = %v, want +Inf", got)
	}
}

// Memory stays bounded: past MaxKeys, full and idle buckets are evicted, and
// when none can be the new key shares the overflow bucket.
func TestBudgetEviction(t *testing.T) {
	bs := newBudgets(0, 5, 2)
	a, b := bs.get("m", "a"), bs.get("m", "b")
	a.withdrawAt(unit)
	b.withdrawAt(unit)
	// a and b are below capacity and used since creation: c cannot evict them.
	if c := bs.get("m", "c"); c != bs.overflow {
		t.Errorf("third key with two busy ones = own bucket, want the overflow bucket")
	}
	if n := bs.n.Load(); n != 2 {
		t.Errorf("keys = %d, want 2", n)
	}
	// The sweep marked a and b unused; touching a keeps it, b is idle and goes.
	bs.get("m", "a")
	d := bs.get("m", "d")
	if d == bs.overflow || bs.n.Load() != 2 || !b.dead.Load() || a.dead.Load() {
		t.Errorf("after idle sweep: d overflow %v, keys %d, b dead %v, a dead %v; want own bucket, 2, true, false",
			d == bs.overflow, bs.n.Load(), b.dead.Load(), a.dead.Load())
	}
	if got := bs.level("m", "b"); got != 5 {
		t.Errorf("level of evicted key = %v, want a fresh 5", got)
	}
	// A full bucket is the same as a new one and is always evictable.
	full := newBudgets(0, 5, 1)
	full.get("m", "x")
	if y := full.get("m", "y"); y == full.overflow || full.n.Load() != 1 {
		t.Errorf("key after a full one: overflow %v, keys %d; want own bucket, 1", y == full.overflow, full.n.Load())
	}
}

// An evicted bucket in the lookup cache is not used again.
func TestBudgetCacheSkipsEvicted(t *testing.T) {
	bs := newBudgets(0, 5, 1)
	x := bs.get("m", "x")
	x.withdrawAt(unit)
	bs.sweep(budgetKey{}) // marks x unused
	bs.sweep(budgetKey{}) // evicts it
	if got := bs.get("m", "x"); got == x {
		t.Errorf("get after eviction returned the evicted bucket")
	}
}

func TestBudgetExhaustedEventAndHookOrder(t *testing.T) {
	var kinds []portico.EventKind
	ctx := portico.ContextWithObserver(context.Background(), observerFunc(func(_ context.Context, e portico.Event) {
		kinds = append(kinds, e.Kind)
	}))
	base := failing(transient())
	mustNew(t, Config{Budget: Budget{NoRefill: true, Burst: 1}, Backoff: Backoff{Schedule: Immediate}}).Wrap(base).Generate(ctx, userReq)
	want := []portico.EventKind{portico.EventRetry, portico.EventBudgetExhausted}
	if len(kinds) != 2 || kinds[0] != want[0] || kinds[1] != want[1] {
		t.Errorf("events = %v, want %v", kinds, want)
	}
}

// A flood of new keys past MaxKeys sweeps once per MaxKeys/16 of them, and the
// map never holds more than MaxKeys buckets.
func TestBudgetFloodBounded(t *testing.T) {
	bs := newBudgets(0.1, 5, 160)
	for i := range 5000 {
		b := bs.get("m", "client-"+strconv.Itoa(i))
		b.withdrawAt(unit) // busy: not evictable as full
		if n := bs.n.Load(); n > 160 {
			t.Fatalf("after %d keys: %d buckets, want <= 160", i+1, n)
		}
	}
	// Idle keys age out: a fresh key gets its own bucket within two sweeps.
	own := 0
	for i := range 40 {
		if bs.get("m", "late-"+strconv.Itoa(i)) != bs.overflow {
			own++
		}
	}
	if own == 0 {
		t.Errorf("new keys after the flood: none got its own bucket, want idle ones evicted")
	}
}

// Lookups through the hot bucket, the hashed cache (with collisions: 1000 keys
// over 256 slots) and the map always return the key's own bucket.
func TestBudgetLookupReturnsOwnBucket(t *testing.T) {
	bs := newBudgets(0.1, 5, 10000)
	first := map[budgetKey]*bucket{}
	for round := range 3 {
		for i := range 1000 {
			k := budgetKey{"m" + strconv.Itoa(i%3), "c" + strconv.Itoa(i)}
			b := bs.get(k.dest, k.client)
			if b.key != k {
				t.Fatalf("get(%v) = bucket of %v", k, b.key)
			}
			if round == 0 {
				first[k] = b
			} else if first[k] != b {
				t.Fatalf("round %d: get(%v) = another bucket than before", round, k)
			}
		}
	}
}

// DESIGN.md's bound, retries <= burst + ratio*requests, must hold exactly, so
// a deposit is never more than ratio tokens: over 10^7 requests at 10%, a
// deposit rounded up by 0.4 in 2^20 (the earlier fixed point) granted 3.8
// retries beyond the bound. Decimal ratios are exact; others round down.
func TestDepositNeverExceedsRatio(t *testing.T) {
	for _, ratio := range []float64{0.1, 0.05, 0.2, 0.3, 1.0 / 3, 0.7, 1e-9, 0.123456789, 1, 2.5} {
		bs := newBudgets(ratio, 10, 10)
		if got := float64(bs.depositAmt) / unit; got > ratio {
			t.Errorf("newBudgets(%v): deposit %v tokens, want <= %v", ratio, got, ratio)
		}
		// 10^7 deposits grant at most ratio*10^7 tokens (the exact product of
		// integers; float64 holds both sides exactly here).
		if granted, bound := float64(bs.depositAmt)*1e7, ratio*unit*1e7; granted > bound {
			t.Errorf("newBudgets(%v): 1e7 deposits = %.0f in 1/unit, want <= %.0f", ratio, granted, bound)
		}
	}
	// Decimal ratios are exact: 10 deposits of 0.1 make one whole token.
	if bs := newBudgets(0.1, 1, 1); 10*bs.depositAmt != unit {
		t.Errorf("10 deposits of 0.1 = %d in 1/unit, want exactly %d", 10*bs.depositAmt, unit)
	}
	// A ratio above the burst fills the bucket in one request, no more.
	if bs := newBudgets(1e12, 3, 1); bs.depositAmt != bs.capacity {
		t.Errorf("deposit for ratio 1e12, burst 3 = %d, want the capacity %d", bs.depositAmt, bs.capacity)
	}
}

// A hostile Budget fails at construction instead of overflowing the fixed
// point: NaN or infinite ratio, a burst whose capacity overflows int64.
func TestNewRejectsBudgetOverflow(t *testing.T) {
	for _, b := range []Budget{{Ratio: math.NaN()}, {Ratio: math.Inf(1)}, {Burst: math.MaxInt}, {Burst: math.MaxInt64 / unit * 2},
		{DestinationRatio: math.NaN()}, {DestinationRatio: math.Inf(-1)}, {DestinationBurst: maxBurst + 1}} {
		if _, err := New(Config{Budget: b}); err == nil {
			t.Errorf("New(Budget %+v) = nil error, want one", b)
		}
	}
	r := mustNew(t, Config{Budget: Budget{Burst: maxBurst}})
	if got := r.BudgetLevel("m", "c"); got != maxBurst {
		t.Errorf("BudgetLevel with Burst maxBurst = %v, want %v", got, float64(maxBurst))
	}
}

// TestDepositPastMaxKeys: a request deposits in its client's bucket, made
// while the budgets have room; past MaxKeys a client without a bucket
// deposits nothing and gets none (its bucket would stay full), so a million
// clients that never retry cost no allocation; a retry makes the bucket and
// draws on it, full as a new one.
func TestDepositPastMaxKeys(t *testing.T) {
	r := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Budget: Budget{MaxKeys: 64, Burst: 2}})
	ok := r.Wrap(okModel())
	req := userReq.Clone()
	for i := range 1000 {
		req.Identity.ClientKey = "client-" + strconv.Itoa(i)
		if _, err := ok.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.budget.n.Load(); n != 64 {
		t.Errorf("client buckets after 1000 clients that never retried = %d, want 64 (MaxKeys, no more)", n)
	}
	if got := testing.AllocsPerRun(100, func() {
		req.Identity.ClientKey = "client-999" // past MaxKeys: no bucket
		ok.Generate(context.Background(), req)
	}); got != 0 {
		t.Errorf("allocs per request of a client past MaxKeys = %v, want 0", got)
	}
	flaky := &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
		if n == 0 {
			return nil, transient()
		}
		return okResp, nil
	}}
	req.Identity.ClientKey = "late"
	if _, err := r.Wrap(flaky).Generate(context.Background(), req); err != nil || flaky.calls() != 2 {
		t.Fatalf("a retried request past MaxKeys = %v after %d calls, want its answer after 2", err, flaky.calls())
	}
	// The retry drew on a bucket made full at 2: its own, or the overflow
	// bucket that new keys share until a sweep (every 4 keys past 64)
	// makes room.
	own, shared := r.budget.level("m", "late"), float64(r.budget.overflow.level.Load())/unit
	if min(own, shared) != 1 || max(own, shared) != 2 {
		t.Errorf("levels of the retried client's bucket %v and of the overflow bucket %v; want one of them 1 (2, one retry taken), the other 2", own, shared)
	}
}

// Refund gives back a token Take took, up to the buckets' capacity.
func TestRefundGivesTheTokenBack(t *testing.T) {
	r := MustNew(Config{Destination: "a"})
	if !r.Take("a", "c") {
		t.Fatal("Take on a full budget = false")
	}
	if got := r.BudgetLevel("a", "c"); got != DefaultBudgetBurst-1 {
		t.Fatalf("level after Take = %v, want %d", got, DefaultBudgetBurst-1)
	}
	r.Refund("a", "c")
	r.Refund("a", "c") // past capacity: kept at the burst
	if got := r.BudgetLevel("a", "c"); got != DefaultBudgetBurst {
		t.Errorf("level after two Refunds = %v, want %d (the burst)", got, DefaultBudgetBurst)
	}
}

// TestHomeBucketsPinned: a Retrier with a Destination holds the buckets of
// its requests without a ClientKey from construction: keys that crowd the
// budgets past MaxKeys never push them into the overflow bucket, no sweep
// evicts them, and a request finds them without a lookup or an allocation.
func TestHomeBucketsPinned(t *testing.T) {
	r := mustNew(t, Config{Destination: "d", Backoff: Backoff{Schedule: Immediate}, Budget: Budget{MaxKeys: 2, Burst: 2}})
	for _, c := range []string{"a", "b"} { // busy keys: none full, none evictable
		r.Take("d", c)
	}
	if n := r.budget.n.Load(); n != 2 {
		t.Fatalf("client buckets = %d, want 2 (MaxKeys)", n)
	}
	flaky := &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
		if n == 0 {
			return nil, transient()
		}
		return okResp, nil
	}}
	req := userReq.Clone()
	req.Identity.ClientKey = ""
	if _, err := r.Wrap(flaky).Generate(context.Background(), req); err != nil || flaky.calls() != 2 {
		t.Fatalf("a retried request without a client key = %v after %d calls, want its answer after 2", err, flaky.calls())
	}
	// Burst 2, one retry taken, the deposit of 0.1 of the request first
	// (the bucket was full, so it stayed at 2).
	if got := r.budget.level("d", ""); got != 1 {
		t.Errorf("level of the home client bucket = %v, want 1", got)
	}
	if got := float64(r.budget.overflow.level.Load()) / unit; got != 2 {
		t.Errorf("level of the overflow bucket = %v, want 2 (untouched)", got)
	}
	ok := r.Wrap(okModel())
	if got := testing.AllocsPerRun(100, func() { ok.Generate(context.Background(), req) }); got != 0 {
		t.Errorf("allocs per request without a client key = %v, want 0", got)
	}
}
