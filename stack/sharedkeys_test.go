package stack

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// countStore is a ratelimit.Store that admits lim.Requests takes per key
// and never refills: enough to see which limiter's calls share a bucket.
type countStore struct {
	mu    sync.Mutex
	taken map[string]int
}

func (s *countStore) Take(_ context.Context, key string, lim *ratelimit.Limits, _ int) (time.Duration, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lim.Requests > 0 && s.taken[key] >= lim.Requests {
		return time.Hour, "requests", nil
	}
	s.taken[key]++
	return 0, "", nil
}

func (s *countStore) Settle(context.Context, string, *ratelimit.Limits, int, *portico.RateLimit, time.Duration) error {
	return nil
}

// TestSharedRouteLimitsKeepTheirOwnBuckets: with Route.Limiter.Shared, each
// route's per-model limiter must keep its own buckets in the store, as it
// does in the process. The stack keys route limiters by Request.Model
// (ratelimit.ByModel) and the client limiter by ClientKey, all in one
// namespace: two routes without ModelName (as README's twoRoutes) both use
// the key "" (redisstore's portico:rl:{k=}), so the primary's calls spend
// the secondary's limit and the secondary never answers; and a tenant whose
// ClientKey equals a route's ModelName shares that route's bucket.
func TestSharedRouteLimitsKeepTheirOwnBuckets(t *testing.T) {
	for _, shared := range []bool{false, true} {
		store := &countStore{taken: map[string]int{}}
		mk := func(name string) Route {
			r := route(name, modeltest.NewFake(modeltest.Answer("ok")))
			r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 2}}
			if shared {
				r.Limiter.Shared = ratelimit.Shared{Store: store}
			}
			return r
		}
		s, err := New(Config{Routes: []Route{mk("a"), mk("b")}})
		if err != nil {
			t.Fatal(err)
		}
		served := map[string]int{}
		for range 6 {
			if resp, err := s.Generate(context.Background(), hello); err == nil {
				served[resp.Route]++
			}
		}
		if served["a"] != 2 || served["b"] != 2 {
			t.Errorf("shared=%v: served %v, want a 2 and b 2 (each route's own limit of 2); store keys %v", shared, served, store.taken)
		}
	}

	// A tenant named like a route's model: its client bucket and the
	// route's model bucket must stay apart.
	store := &countStore{taken: map[string]int{}}
	r := route("a", modeltest.NewFake(modeltest.Answer("ok")))
	r.ModelName = "m"
	r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 2}}
	r.Limiter.Shared = ratelimit.Shared{Store: store}
	s, err := New(Config{Routes: []Route{r}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 2},
		Shared: ratelimit.Shared{Store: store}}})
	if err != nil {
		t.Fatal(err)
	}
	req := hello.Clone()
	req.Identity.ClientKey = "m"
	ok := 0
	for range 2 {
		if _, err := s.Generate(context.Background(), req); err == nil {
			ok++
		}
	}
	if ok != 2 {
		t.Errorf("tenant %q: %d of 2 accepted under a client limit of 2 and a route limit of 2; store keys %v", "m", ok, store.taken)
	}
}
