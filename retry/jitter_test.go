package retry

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

func TestCeilings(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		base, limit time.Duration
		n           int
		want        []time.Duration
	}{
		{100 * ms, 10 * time.Second, 4, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms}},
		{100 * ms, 300 * ms, 4, []time.Duration{100 * ms, 200 * ms, 300 * ms, 300 * ms}},
		{50 * ms, 50 * ms, 2, []time.Duration{50 * ms, 50 * ms}},
		{ms, time.Hour, 0, []time.Duration{ms}}, // MaxAttempts 1: one entry, unused
	}
	for _, tt := range tests {
		if got := ceilings(tt.base, tt.limit, tt.n); !equal(got, tt.want) {
			t.Errorf("ceilings(%v, %v, %d) = %v, want %v", tt.base, tt.limit, tt.n, got, tt.want)
		}
	}
	// Far beyond 63 doublings the ceiling stays at the cap, with no overflow.
	r := mustNew(t, Config{MaxAttempts: 1000, Backoff: Backoff{BaseDelay: time.Second, MaxDelay: time.Minute}})
	for _, i := range []int{7, 64, 65, 999} {
		if got := r.ceiling(i); got != time.Minute {
			t.Errorf("ceiling(%d) = %v, want 1m", i, got)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	mk := func(kind Schedule) *Retrier {
		return mustNew(t, Config{MaxAttempts: 10, Backoff: Backoff{Schedule: kind, BaseDelay: 100 * ms, MaxDelay: time.Second}})
	}
	tests := []struct {
		kind Schedule
		i    int
		prev time.Duration
		u    float64
		want time.Duration
	}{
		{FullJitter, 1, 0, 0, 0},
		{FullJitter, 1, 0, 0.5, 50 * ms},
		{FullJitter, 3, 0, 0.5, 200 * ms},  // ceiling 400ms
		{FullJitter, 9, 0, 0.25, 250 * ms}, // ceiling capped at 1s
		{DecorrelatedJitter, 1, 100 * ms, 0, 100 * ms},
		{DecorrelatedJitter, 1, 100 * ms, 0.5, 200 * ms},    // uniform[100, 300)
		{DecorrelatedJitter, 2, 500 * ms, 0.9, time.Second}, // 100+0.9*1400 capped
		{Exponential, 1, 0, 0.7, 100 * ms},
		{Exponential, 4, 0, 0.7, 800 * ms},
		{Exponential, 5, 0, 0.7, time.Second},
		{Immediate, 3, 0, 0.7, 0},
	}
	for _, tt := range tests {
		if got := mk(tt.kind).backoffDelay(tt.i, tt.prev, tt.u); got != tt.want {
			t.Errorf("%v backoffDelay(%d, %v, %v) = %v, want %v", tt.kind, tt.i, tt.prev, tt.u, got, tt.want)
		}
	}
}

// lockedRand is a seeded source safe for concurrent use.
func lockedRand(seed uint64) func() float64 {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64()
	}
}

// Seed 001: 100 clients that failed together each retry once with full jitter
// over 100 ms. All 100 retries happen; in 10 ms bins the peak falls from 100
// (no jitter) to about 14, and P(any bin >= 25) <= 1.3e-4 (union bound over ten
// binomial(100, 0.1) tails). The spread is checked against uniform with
// Pearson's chi-square on the 10 bins (9 degrees of freedom, 0.1% critical
// value 27.88).
func TestFullJitterSpreadsHundredClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const clients = 100
		bin := 10 * time.Millisecond
		var mu sync.Mutex
		seen := map[string]int{}
		var retryAt []time.Duration
		start := time.Now()
		base := portico.ModelFunc(func(_ context.Context, req *portico.Request) (*portico.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			seen[req.Identity.ClientKey]++
			if seen[req.Identity.ClientKey] == 1 {
				return nil, transient()
			}
			retryAt = append(retryAt, time.Since(start))
			return okResp, nil
		})
		r := mustNew(t, Config{MaxAttempts: 2, Backoff: Backoff{BaseDelay: 100 * time.Millisecond, MaxDelay: 100 * time.Millisecond, Rand: lockedRand(1)}})
		m := r.Wrap(base)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				req := userReq.Clone()
				req.Identity.ClientKey = string(rune('A'+c%26)) + string(rune('a'+c/26))
				if _, err := m.Generate(context.Background(), req); err != nil {
					t.Errorf("client %d: %v", c, err)
				}
			})
		}
		wg.Wait()
		if len(retryAt) != clients {
			t.Fatalf("retries = %d, want %d", len(retryAt), clients)
		}
		var bins [10]int
		for _, at := range retryAt {
			if at < 0 || at >= 100*time.Millisecond {
				t.Fatalf("retry at %v, want within [0, 100ms)", at)
			}
			bins[at/bin]++
		}
		peak, chi2 := 0, 0.0
		for _, b := range bins {
			peak = max(peak, b)
			d := float64(b) - clients/10.0
			chi2 += d * d / (clients / 10.0)
		}
		t.Logf("10 ms bins %v: peak %d (seed: ~14, 100 without jitter), chi-square %.2f (9 df)", bins, peak, chi2)
		if peak >= 25 {
			t.Errorf("peak bin = %d, want < 25", peak)
		}
		if chi2 > 27.88 {
			t.Errorf("chi-square = %.2f, want <= 27.88 (uniform at the 0.1%% level)", chi2)
		}
	})
}

// The full-jitter draws of one retry index are uniform on [0, ceiling): a
// chi-square test on 20 bins over 20,000 draws from a seeded source.
func TestFullJitterUniform(t *testing.T) {
	r := mustNew(t, Config{MaxAttempts: 4, Backoff: Backoff{BaseDelay: 100 * time.Millisecond, Rand: rand.New(rand.NewPCG(7, 7)).Float64}})
	const draws, nbins = 20000, 20
	ceil := r.ceiling(3) // 400ms
	var bins [nbins]int
	for range draws {
		d := r.backoffDelay(3, 0, r.rand())
		if d < 0 || d >= ceil {
			t.Fatalf("delay %v outside [0, %v)", d, ceil)
		}
		bins[int(d*nbins/ceil)]++
	}
	chi2 := 0.0
	for _, b := range bins {
		e := float64(draws) / nbins
		chi2 += (float64(b) - e) * (float64(b) - e) / e
	}
	// 19 degrees of freedom: the 0.01% critical value is 49.5.
	if chi2 > 49.5 {
		t.Errorf("chi-square of full-jitter draws = %.1f, want <= 49.5", chi2)
	}
}
