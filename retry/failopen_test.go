package retry

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/portico-llm/portico"
)

// tokenStore is a BudgetStore of one client budget without refill (a
// NoRefill, ClientOnly Retrier's): left tokens, shared by every instance,
// while up.
type tokenStore struct {
	mu   sync.Mutex
	left int
	down bool
}

func (s *tokenStore) Deposit(context.Context, string, string, *BudgetLimits) error { return nil }

func (s *tokenStore) Spend(context.Context, string, string, *BudgetLimits) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.down:
		return "", errors.New("down")
	case s.left < 1:
		return "client", nil
	}
	s.left--
	return "", nil
}

// TestSharedFailOpenShareFollowsTheStore: the retry budget's local share
// follows the same rule as ratelimit's (internal/failopen). Five
// instances share 20 retries, 4 each when the store fails. d spends 3
// through the store, so its share keeps 1; a spends the other 17 and keeps
// nothing; the store's refusal of b's retry empties b's share; c, which saw
// neither, keeps its 4 (what the allowance counts). Before the rule every
// share was full at every outage: 4 each.
func TestSharedFailOpenShareFollowsTheStore(t *testing.T) {
	s := &tokenStore{left: 20}
	var attempts int
	fail := transient()
	instance := func(maxAttempts int) portico.Model {
		return mustNew(t, Config{MaxAttempts: maxAttempts, Backoff: Backoff{Schedule: Immediate},
			Budget: Budget{Burst: 20, NoRefill: true, ClientOnly: true, Shared: Shared{Store: s, FailOpen: true, Instances: 5}}}).Wrap(
			portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { attempts++; return nil, fail }))
	}
	retries := func(m portico.Model) int {
		attempts = 0
		m.Generate(context.Background(), userReq)
		return attempts - 1
	}
	d, a, b, c := instance(4), instance(100), instance(100), instance(100)
	for _, tc := range []struct {
		name string
		m    portico.Model
		want int
	}{{"d", d, 3}, {"a", a, 17}, {"b", b, 0}} {
		if n := retries(tc.m); n != tc.want {
			t.Fatalf("%s's retries through the store = %d, want %d", tc.name, n, tc.want)
		}
	}
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	for _, tc := range []struct {
		name string
		m    portico.Model
		want int
	}{{"d", d, 1}, {"a", a, 0}, {"b", b, 0}, {"c", c, 4}} {
		if n := retries(tc.m); n != tc.want {
			t.Errorf("%s's retries with the store down = %d, want %d", tc.name, n, tc.want)
		}
	}
}

// TestSharedFailOpenLead: failing open among five instances, a share that
// holds a fifth of a token gives a retry (internal/failopen.Lead: the
// fractions the five shares hold apart are not lost) and then owes the
// rest; one holding less gives none.
func TestSharedFailOpenLead(t *testing.T) {
	r := mustNew(t, Config{Budget: Budget{Burst: 20, ClientOnly: true, Shared: Shared{Store: &tokenStore{down: true}, FailOpen: true, Instances: 5}}})
	p := r.pairOf("m", "c")
	p.client.level.Store(unit/5 - 1)
	if r.Take("m", "c") {
		t.Fatal("Take on a share holding just under a fifth of a token = true, want false")
	}
	p.client.level.Store(unit / 5)
	if !r.Take("m", "c") || p.client.level.Load() != unit/5-unit {
		t.Errorf("Take on a share holding a fifth of a token: level after %d, want %d", p.client.level.Load(), unit/5-unit)
	}
}
