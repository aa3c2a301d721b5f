package redisstore

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// trips counts the commands a client sends: its round trips (a go-redis
// hook; a pipeline counts once).
type trips struct{ n atomic.Int64 }

func (h *trips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// leased returns n leased Limiters of lim over srv (each its own client
// and Store, an instance of a service) and the hook counting their
// commands, the scripts' loading done.
func leased(t *testing.T, srv *redistest.Server, n int, lim ratelimit.Limits, est int) ([]*ratelimit.Limiter, *trips) {
	t.Helper()
	h := &trips{}
	var ls []*ratelimit.Limiter
	for range n {
		c := srv.Client(t)
		if err := c.Ping(context.Background()).Err(); err != nil { // the connection's handshake
			t.Fatal(err)
		}
		c.AddHook(h)
		s := newStore(t, srv, Config{Client: c})
		l, err := ratelimit.New(ratelimit.Config{Limits: lim, Key: ratelimit.ByClient, Sharing: ratelimit.Leased,
			Estimator: portico.EstimatorFunc(func(*portico.Request) int { return est }),
			Shared:    ratelimit.Shared{Store: s.Buckets()}})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	if err := leaseScript.Load(context.Background(), srv.Client(t)).Err(); err != nil {
		t.Fatal(err)
	}
	return ls, h
}

// echo answers with the usage its request reserved, less what take says
// was not used.
func echo(take func(reserve int) int) portico.Model {
	return portico.ModelFunc(func(_ context.Context, req *portico.Request) (*portico.Response, error) {
		used := take(1 + req.MaxOutputTokens)
		return &portico.Response{Usage: portico.Usage{InputTokens: 1, OutputTokens: used - 1}}, nil
	})
}

// TestLeaseIdleFirstCallOneTrip: an idle tenant's first call in leased
// mode costs one round trip, as in strict mode: the lease is the
// admission. Its settle costs none; the next call on the lease none.
func TestLeaseIdleFirstCallOneTrip(t *testing.T) {
	srv := redistest.Start(t)
	ls, h := leased(t, srv, 1, ratelimit.Limits{Requests: 60_000, Tokens: 60_000_000}, 100)
	m := ls[0].Wrap(echo(func(r int) int { return r / 2 }))
	req := &portico.Request{Model: "m", MaxOutputTokens: 100, Identity: portico.Identity{ClientKey: "idle"}}
	before := h.n.Load()
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := h.n.Load() - before; got != 1 {
		t.Errorf("first call of an idle tenant: %d round trips, want 1", got)
	}
}

// TestLeaseHotTenantRoundTrips: a hot tenant under its limit, ten
// instances each sending 300 calls 2 ms apart, costs at most 0.1 round
// trips per call amortized, leases and their return included.
func TestLeaseHotTenantRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	const n, calls = 10, 300
	ls, h := leased(t, srv, n, ratelimit.Limits{Requests: 600_000, Tokens: 60_000_000, TokenBurst: 2_000_000}, 500)
	var wg sync.WaitGroup
	var refused atomic.Int64
	before := h.n.Load()
	for i, l := range ls {
		m := l.Wrap(echo(func(r int) int { return r * 3 / 4 }))
		wg.Go(func() {
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			req := &portico.Request{Model: "m", MaxOutputTokens: 500, Identity: portico.Identity{ClientKey: "hot"}}
			for range calls {
				<-tick.C
				if _, err := m.Generate(context.Background(), req); err != nil {
					refused.Add(1)
					t.Errorf("instance %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	per := float64(h.n.Load()-before) / (n * calls)
	t.Logf("hot tenant, %d instances x %d calls (cost 1,000 tokens, lease cap 20,000): %d round trips, %.3f per call",
		n, calls, h.n.Load()-before, per)
	if per > 0.1 {
		t.Errorf("%.3f round trips per call, want <= 0.1", per)
	}
}

// TestLeaseBoundTenInstances: ten leased Limiters over one Redis call as
// fast as they can for a second with random costs and refunds; over
// every interval the net tokens admitted stay within b + r·dt plus what
// the leases can hold, ten leases of at most b/100 each. Run with -v for
// the figures.
func TestLeaseBoundTenInstances(t *testing.T) {
	srv := redistest.Start(t)
	const n, b, perSec = 10, 400_000, 100_000
	ls, h := leased(t, srv, n, ratelimit.Limits{Tokens: perSec * 60, TokenBurst: b}, 1)
	var (
		mu       sync.Mutex
		adm, ref []span
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(time.Second)
	before := h.n.Load()
	for i, l := range ls {
		rng := rand.New(rand.NewPCG(uint64(i), 25))
		var called, returned time.Time
		m := l.Wrap(echo(func(r int) int {
			called = time.Now()
			used := 1 + rng.IntN(r)
			returned = time.Now()
			return used
		}))
		wg.Go(func() {
			for time.Now().Before(deadline) {
				req := &portico.Request{Model: "m", MaxOutputTokens: 50 + rng.IntN(350), Identity: portico.Identity{ClientKey: "hot"}}
				start := time.Now()
				resp, err := m.Generate(context.Background(), req)
				end := time.Now()
				if err != nil {
					continue
				}
				reserve := 1 + req.MaxOutputTokens
				used := resp.Usage.InputTokens + resp.Usage.OutputTokens
				mu.Lock()
				adm = append(adm, span{start, called, float64(reserve)})
				if used < reserve {
					ref = append(ref, span{returned, end, float64(reserve - used)})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	leases := float64(n * b / 100)
	ex := worst(adm, ref, b, perSec)
	t.Logf("b=%d r=%d/s, %d instances: %d admissions, %d round trips (%.3f per admission); worst excess over b + r·dt %.0f tokens, bound (the leases) %.0f",
		b, perSec, n, len(adm), h.n.Load()-before, float64(h.n.Load()-before)/float64(len(adm)), ex, leases)
	if ex > leases {
		t.Errorf("net admitted exceeds b + r·dt by %.0f tokens, more than the leases hold (%.0f)", ex, leases)
	}
	if len(adm) == 0 {
		t.Fatal("nothing admitted")
	}
}

// TestLeaseOvershootIsTheLeases: the bound's L is reached, not only
// respected. Ten leased instances of a tenant allowed a burst of 1,000
// (a lease holds 10) grow their leases to the cap with 16 calls each
// (leases of 1, 2, 4, 8, then 10 with 9 left); the store's bucket
// refills; a strict instance spends all it holds; then each leased one
// spends the 9 its lease holds, without asking the store. Over that
// interval the tenant is admitted b + r·dt plus about the 90 the leases
// held, within L = 10 leases of 10.
func TestLeaseOvershootIsTheLeases(t *testing.T) {
	srv := redistest.Start(t)
	const n, b, r = 10, 1000.0, 200.0 // instances; burst; requests per second
	lim := ratelimit.Limits{Requests: int(r * 60), RequestBurst: int(b)}
	ls, h := leased(t, srv, n, lim, 1)
	var (
		mu sync.Mutex
		at []time.Duration
	)
	start := time.Now()
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		mu.Lock()
		at = append(at, time.Since(start))
		mu.Unlock()
		return &portico.Response{}, nil
	})
	req := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "t"}}
	var ms []portico.Model
	for _, l := range ls {
		m := l.Wrap(ok)
		ms = append(ms, m)
		for range 16 {
			if _, err := m.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
	}
	strict, err := ratelimit.New(ratelimit.Config{Limits: lim, Key: ratelimit.ByClient, Sharing: ratelimit.Strict,
		Shared: ratelimit.Shared{Store: newStore(t, srv, Config{}).Buckets()}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the bucket full again (250 at 200 a second)
	mu.Lock()
	at = at[:0] // the interval starts with the drain
	mu.Unlock()
	sm := strict.Wrap(ok)
	drained := 0
	for ; ; drained++ {
		if _, err := sm.Generate(context.Background(), req); err != nil {
			break
		}
	}
	trips := h.n.Load()
	for i, m := range ms {
		for range 9 {
			if _, err := m.Generate(context.Background(), req); err != nil {
				t.Fatalf("instance %d: %v", i, err)
			}
		}
	}
	if got := h.n.Load() - trips; got != 0 {
		t.Errorf("the leased instances made %d round trips spending their leases, want 0", got)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(at)
	worst := math.Inf(-1)
	for i := range at {
		for j := i; j < len(at); j++ {
			worst = max(worst, float64(j-i+1)-(b+r*(at[j]-at[i]).Seconds()))
		}
	}
	t.Logf("%d instances: %d drained by a strict instance, then 90 spent from the leases: worst excess over b + r·dt %.1f requests, L %d",
		n, drained, worst, n*10)
	if worst < 60 || worst > n*10 {
		t.Errorf("worst excess %.1f over b + r·dt, want most of the 90 the leases held, within L = %d", worst, n*10)
	}
}
