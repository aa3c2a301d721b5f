package ratelimit

import (
	"context"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestEvictIdleKeys: a million distinct keys over time do not leave a million
// entries behind. Each key makes one call; a second of virtual time passes
// every 1,000 keys, after which their buckets are full again (1 request/s,
// 100 tokens/s refill against 100 reserved) and the keys are idle. Sweeps run
// when a shard doubles, so the table holds at most about twice the keys of
// the last second plus minSweep per shard.
func TestEvictIdleKeys(t *testing.T) {
	n := 1_000_000
	if testing.Short() || raceEnabled {
		n = 200_000 // the race detector makes a million calls take ~25s
	}
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Requests: 60, Tokens: 6000}, Estimator: fixedEstimator(10)})
		m := l.Wrap(okModel(10, 20))
		r := req("", 90)
		ctx := t.Context()
		bound := 2*1000 + numShards*minSweep*2
		most := 0
		for i := range n {
			r.Identity.ClientKey = strconv.Itoa(i)
			if _, err := m.Generate(ctx, r); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			if i%1000 == 999 {
				most = max(most, l.Keys())
				time.Sleep(time.Second)
			}
		}
		if most > bound {
			t.Errorf("after %d distinct keys the table held up to %d entries, want <= %d", n, most, bound)
		}
		t.Logf("%d keys: at most %d entries live", n, most)
	})
}

// TestEvictedStateIsFresh: a key that was evicted starts again with full
// buckets, as it would have had anyway; a key still refilling is kept.
func TestEvictKeepsBusyKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 600, TokenBurst: 100}, Estimator: fixedEstimator(0)})
		m := l.Wrap(okModel(0, 100))
		busy := req("busy", 100)
		m.Generate(t.Context(), busy) // empties its bucket: 10s to refill
		for i := range 4 * numShards * minSweep {
			m.Generate(t.Context(), req("k"+strconv.Itoa(i), 1))
		}
		if got := l.levelOf(busy, time.Now()); got != 0 {
			t.Errorf("busy key's level after many inserts = %v, want 0 (kept, not reset)", got)
		}
	})
}

func TestZeroAllocs(t *testing.T) {
	l := mustNew(t, Config{Limits: Limits{Requests: 1e9, Tokens: 1e12, Period: time.Second, MaxInFlight: 100}, DefaultMaxTokens: 100})
	resp := &portico.Response{Usage: portico.Usage{InputTokens: 7, OutputTokens: 10}}
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil }))
	ctx := context.Background()
	m.Generate(ctx, benchReq) // create the key
	if a := testing.AllocsPerRun(1000, func() { m.Generate(ctx, benchReq) }); a != 0 {
		t.Errorf("allocs per admitted call on an existing key = %v, want 0", a)
	}
	// With a key function too.
	l2 := mustNew(t, Config{Limits: Limits{Tokens: 1e12}, DefaultMaxTokens: 100, Key: ByModel})
	m2 := l2.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil }))
	m2.Generate(ctx, benchReq)
	if a := testing.AllocsPerRun(1000, func() { m2.Generate(ctx, benchReq) }); a != 0 {
		t.Errorf("allocs per call keyed ByModel = %v, want 0", a)
	}
}

// TestConcurrency: many goroutines on one key never exceed L_max in flight,
// and the net admitted tokens over every interval stay within b + r*dt.
func TestConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lmax, b, perMin = 3, 100, 6000 // r = 100 tokens/s
		l := mustNew(t, Config{Limits: Limits{Tokens: perMin, TokenBurst: b, MaxInFlight: lmax}, Queue: 40, Mode: Wait, MaxWait: time.Hour, Estimator: fixedEstimator(5)})
		var inflight, most atomic.Int32
		var mu sync.Mutex
		var evs []event
		var calls atomic.Int32
		m := l.Wrap(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			now := time.Now()
			n := inflight.Add(1)
			for {
				if old := most.Load(); n <= old || most.CompareAndSwap(old, n) {
					break
				}
			}
			out := int(calls.Add(1)) % (r.MaxOutputTokens + 1)
			mu.Lock()
			evs = append(evs, event{now, float64(5 + r.MaxOutputTokens)})
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			inflight.Add(-1)
			mu.Lock()
			evs = append(evs, event{time.Now(), -float64(r.MaxOutputTokens - out)}) // the refund
			mu.Unlock()
			return &portico.Response{Usage: portico.Usage{InputTokens: 5, OutputTokens: out}}, nil
		}))
		var wg sync.WaitGroup
		var admitted atomic.Int32
		for g := range 40 {
			wg.Go(func() {
				for i := range 10 {
					for {
						_, err := m.Generate(t.Context(), req("one", 10+(g*7+i*13)%60))
						if err == nil {
							admitted.Add(1)
							break
						}
						t.Errorf("call = %v, want admitted (the queue holds everyone)", err)
						return
					}
				}
			})
		}
		wg.Wait()
		if admitted.Load() != 400 || most.Load() != lmax {
			t.Fatalf("admitted %d, most in flight %d; want 400 and exactly %d (the cap, reached)", admitted.Load(), most.Load(), lmax)
		}
		mu.Lock()
		defer mu.Unlock()
		if ex := maxExcess(evs, b, perMin/60.0); ex > 1e-6 {
			t.Errorf("net admitted tokens exceed b + r*dt by %v", ex)
		}
	})
}

// TestEvictionRace: real goroutines on keys that are evicted and recreated
// while others use them never see more than L_max calls of one key in
// flight (run with -race).
func TestEvictionRace(t *testing.T) {
	l := mustNew(t, Config{Limits: Limits{MaxInFlight: 2}})
	var mu sync.Mutex
	inflight := map[string]int{}
	over := 0
	m := l.Wrap(portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
		mu.Lock()
		inflight[r.Identity.ClientKey]++
		if inflight[r.Identity.ClientKey] > 2 {
			over++
		}
		mu.Unlock()
		mu.Lock()
		inflight[r.Identity.ClientKey]--
		mu.Unlock()
		return &portico.Response{}, nil
	}))
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			r := req("", 1)
			for i := range 3000 {
				r.Identity.ClientKey = strconv.Itoa((i*7 + g) % 6000)
				if _, err := m.Generate(context.Background(), r); err == nil {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if over != 0 || admitted.Load() == 0 {
		t.Errorf("calls over L_max: %d (admitted %d), want 0", over, admitted.Load())
	}
	if n := l.Keys(); n >= 6000 {
		t.Errorf("entries after 6000 keys = %d, want fewer: eviction must have run during the race", n)
	}
}

// TestHashCollision: when the snapshot's slot for a key's hash holds another
// key's entry (two keys with one 64-bit hash), the lookup still finds the
// key's own entry, under the shard's lock.
func TestHashCollision(t *testing.T) {
	l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}})
	now := l.now()
	a, b := key{a: "a"}, key{a: "b"}
	ea := l.acquire(a, now)
	ea.mu.Unlock()
	eb := l.acquire(b, now)
	eb.mu.Unlock()
	h := maphash.Comparable(l.seed, b)
	r := newSnapshot(1)
	r.put(h, ea)
	l.shards[h&(numShards-1)].read.Store(r)
	e := l.acquire(b, now)
	e.mu.Unlock()
	if e != eb || e.k != b {
		t.Errorf("acquire(b) with a's entry in b's snapshot slot = entry of %v, want b's", e.k)
	}
}

// TestSnapshot: every entry put is found under its hash, at every size; a
// hash never put is not found; of two entries put under one hash the first
// is kept. The hashes share their low shardBits, as the hashes of one
// shard's keys do.
func TestSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 3, 4, 5, 100, 1000} {
		tb := newSnapshot(n)
		hs := map[uint64]*entry{}
		for len(hs) < n {
			h := rng.Uint64()<<shardBits | 5
			hs[h] = &entry{}
		}
		for h, e := range hs {
			tb.put(h, e)
		}
		for h, e := range hs {
			if got := tb.get(h); got != e {
				t.Fatalf("n=%d: get(%#x) = %p, want %p", n, h, got, e)
			}
		}
		for range 100 {
			h := rng.Uint64()<<shardBits | 5
			if _, ok := hs[h]; !ok && tb.get(h) != nil {
				t.Fatalf("n=%d: get(%#x) of a hash never put = %p, want nil", n, h, tb.get(h))
			}
		}
		if len(tb.slots) < 2*n {
			t.Errorf("n=%d: %d slots, want >= %d (load <= 1/2)", n, len(tb.slots), 2*n)
		}
	}
	tb := newSnapshot(2)
	first, second := &entry{}, &entry{}
	tb.put(42, first)
	tb.put(42, second)
	if got := tb.get(42); got != first {
		t.Errorf("get after two puts under one hash = %p, want the first %p", got, first)
	}
}
