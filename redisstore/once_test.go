package redisstore

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
)

// retryingStore returns a Store whose client keeps go-redis's default
// retries (MaxRetries 3: a command whose connection was cut is sent
// again), through p: the client the package documentation recommends.
func retryingStore(t testing.TB, p *redistest.Proxy, cfg Config) *Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr, ContextTimeoutEnabled: true, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	cfg.Client = c
	if cfg.Timeout == 0 {
		cfg.Timeout = testTimeout
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// slowLimits refill a thousandth of a token per hour: a level read back
// is what the scripts left, to a millionth of a token.
var slowLimits = &ratelimit.Limits{Tokens: 1, TokenBurst: 100, Period: 1000 * time.Hour}

// tokenLevel reads key's token level, in tokens, to a thousandth.
func tokenLevel(t *testing.T, s *Store, key string) float64 {
	t.Helper()
	return math.Round(hget(t, s, key, "tl")/1e3) / 1e3
}

// TestLostReplyAppliesOnce: with go-redis's default retries, a reply lost
// after the server ran the script makes the client send it again; each
// operation must still apply once: a take charges its cost once and
// reports the first run's answer, a refund credits once, a retry token is
// taken once, a deposit credited once.
func TestLostReplyAppliesOnce(t *testing.T) {
	srv := redistest.Start(t)
	p := srv.Proxy(t)
	s := retryingStore(t, p, Config{})
	direct := newStore(t, srv, Config{})
	ctx := context.Background()
	b := s.Buckets()

	p.DropReply("EVAL")
	if w, _, err := b.Take(ctx, "k", slowLimits, 5); err != nil || w != 0 {
		t.Fatalf("Take(5) with its reply lost = %v, %v; want admitted", w, err)
	}
	if got := tokenLevel(t, direct, "k"); got != 95 {
		t.Errorf("level after one Take(5) whose reply was lost = %v, want 95 (charged once)", got)
	}
	if _, _, err := b.Take(ctx, "r", slowLimits, 50); err != nil {
		t.Fatal(err)
	}
	p.DropReply("EVAL")
	if err := b.Settle(ctx, "r", slowLimits, 5, nil, time.Minute); err != nil {
		t.Fatalf("Settle(+5) with its reply lost = %v", err)
	}
	s.flush()
	if got := tokenLevel(t, direct, "r"); got != 55 {
		t.Errorf("level after a refund of 5 to 50 whose reply was lost = %v, want 55 (credited once)", got)
	}

	bl := &retry.BudgetLimits{Deposit: 1e8, Capacity: 10e9, DestinationDeposit: 1e8, DestinationCapacity: 10e9}
	budgets := s.Budgets()
	p.DropReply("EVAL")
	if refused, err := budgets.Spend(ctx, "dest", "tenant", bl); err != nil || refused != "" {
		t.Fatalf("Spend with its reply lost = %q, %v; want taken", refused, err)
	}
	for _, k := range budgetKeys(direct, "dest", "tenant") {
		if got, _ := direct.c.Get(ctx, k).Int64(); got != 9e9 {
			t.Errorf("%s after one Spend whose reply was lost = %d, want 9e9 (one token taken)", k, got)
		}
	}
	p.DropReply("EVAL")
	if err := budgets.Deposit(ctx, "dest", "tenant", bl); err != nil {
		t.Fatalf("Deposit with its reply lost = %v", err)
	}
	for _, k := range budgetKeys(direct, "dest", "tenant") {
		if got, _ := direct.c.Get(ctx, k).Int64(); got != 9.1e9 {
			t.Errorf("%s after one Deposit of 0.1 whose reply was lost = %d, want 9.1e9 (credited once)", k, got)
		}
	}
	if p.Dropped() != 4 {
		t.Fatalf("%d replies dropped, want 4: the test did not inject its faults", p.Dropped())
	}
}

// budgetKeys returns the keys of (dest, client)'s bucket and dest's.
func budgetKeys(s *Store, dest, client string) []string {
	return s.Budgets().keys(dest, client, &retry.BudgetLimits{DestinationCapacity: 1})[:2]
}

// TestBucketBoundKilledConnections: ten instances over one Redis, each
// client keeping go-redis's default retries, with every connection cut
// every 50 ms (the fault) or every 5 ms, for 600 ms: scripts whose
// replies are lost run again when the client resends them. Over every
// interval the net tokens admitted stay within b + r*dt, as without faults
// (TestBucketBoundTenInstances). Scripts applied twice exceeded it by up
// to 38 tokens (b = 200) in a run of this test.
func TestBucketBoundKilledConnections(t *testing.T) {
	for _, every := range []time.Duration{50 * time.Millisecond, 5 * time.Millisecond} {
		t.Run("every "+every.String(), func(t *testing.T) {
			srv := redistest.Start(t)
			p := srv.Proxy(t)
			const b, perSec, maxCost = 200, 1000, 100
			store := func(prefix string) ratelimit.Store {
				return retryingStore(t, p, Config{Prefix: prefix, Probe: time.Millisecond}).Buckets()
			}
			stop := make(chan struct{})
			killed := make(chan int)
			go func() {
				n := 0
				tick := time.NewTicker(every)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						killed <- n
						return
					case <-tick.C:
						p.Reset()
						n++
					}
				}
			}()
			adm, ref := run10(t, store, ratelimit.Reject, 7, b, perSec, maxCost, 600*time.Millisecond)
			close(stop)
			n := <-killed
			ex := worst(adm, ref, b, perSec)
			t.Logf("b=%d r=%d/s: %d admissions, %d refunds, connections cut %d times; worst excess over b + r*dt %.3f tokens",
				b, perSec, len(adm), len(ref), n, ex)
			total := 0.0
			for _, a := range adm {
				total += a.tokens
			}
			if n < 10 || total < 2*b {
				t.Fatalf("%d cuts, %.0f tokens admitted: the test did not inject its faults under load (want 10 cuts, 2b admitted)", n, total)
			}
			if ex > 1e-3 {
				t.Errorf("net admitted exceeds b + r*dt by %.3f tokens under cut connections", ex)
			}
		})
	}
}
