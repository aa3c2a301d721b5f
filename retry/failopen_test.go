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

// TestSharedFailOpenExcess: what the shares hold as an outage begins is
// what the instances spend beyond the shared budget, since the store,
// which did not see those retries, gives its own tokens again once back.
// Three instances share 30 retries; each spends 4 through the store. With
// the load shared and no refusal yet, each share mirrors its third of the
// 18 the store has left: the outage spends those 18 and the store then
// 18 more, 48 retries where the shared budget allows 30. Had they spent
// the store's 30 before it failed, the shares would hold nothing and the
// outage would spend none.
func TestSharedFailOpenExcess(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		before                int // retries each instance spends through the store first
		outage, after, beyond int // retries in the outage, through the store after it, beyond the 30
	}{
		{"load shared, none refused", 4, 18, 18, 18},
		{"load shared, burst spent", 10, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &tokenStore{left: 30}
			var attempts, stopAt int
			fail := transient()
			instance := func() portico.Model {
				return mustNew(t, Config{MaxAttempts: 200, Backoff: Backoff{Schedule: Immediate},
					Budget: Budget{Burst: 30, NoRefill: true, ClientOnly: true, Shared: Shared{Store: s, FailOpen: true, Instances: 3}}}).Wrap(
					portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
						if attempts++; attempts == stopAt {
							return &portico.Response{Text: "ok"}, nil
						}
						return nil, fail
					}))
			}
			// retries returns the retries of a call that fails until its
			// attempt max+1, or until the budget refuses a retry.
			retries := func(m portico.Model, max int) int {
				attempts, stopAt = 0, max+1
				m.Generate(context.Background(), userReq)
				if attempts == stopAt {
					return max
				}
				return attempts - 1
			}
			rs := []portico.Model{instance(), instance(), instance()}
			total := 0
			for _, r := range rs {
				total += retries(r, tc.before)
			}
			s.mu.Lock()
			s.down = true
			s.mu.Unlock()
			outage := 0
			for _, r := range rs {
				outage += retries(r, 100)
			}
			s.mu.Lock()
			s.down = false
			s.mu.Unlock()
			after := retries(rs[0], 100)
			total += outage + after
			if outage != tc.outage || after != tc.after || total-30 != tc.beyond {
				t.Errorf("retries in the outage %d, through the store after it %d, beyond the shared 30: %d; want %d, %d, %d",
					outage, after, total-30, tc.outage, tc.after, tc.beyond)
			}
		})
	}
}
