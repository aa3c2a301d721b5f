package ratelimit

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// leaseFake is a LeaseStore in memory on the bubble's clock: one bucket
// pair per key, every Lease's arguments and the strict calls recorded.
type leaseFake struct {
	mu     sync.Mutex
	epoch  time.Time
	b      map[string]*[2]fakeLevel // tokens, requests
	leases []leaseCall
	takes  int
	views  []string // "view" for each Settle with a provider view, "lease" for each Lease, in order
}

type fakeLevel struct {
	level float64
	last  time.Duration
}

type leaseCall struct{ back, need, want, got Grant }

func newLeaseFake() *leaseFake { return &leaseFake{epoch: time.Now(), b: map[string]*[2]fakeLevel{}} }

// levels returns key's buckets refilled to now under lim.
func (f *leaseFake) levels(key string, lim *Limits) *[2]fakeLevel {
	now := time.Since(f.epoch)
	b := f.b[key]
	if b == nil {
		b = &[2]fakeLevel{{float64(lim.TokenBurst), now}, {float64(lim.RequestBurst), now}}
		f.b[key] = b
	}
	rates, bursts := [2]float64{lim.tokenRate(), lim.requestRate()}, [2]float64{float64(lim.TokenBurst), float64(lim.RequestBurst)}
	for i := range b {
		b[i].level = min(bursts[i], b[i].level+rates[i]*(now-b[i].last).Seconds())
		b[i].last = now
	}
	return b
}

func (f *leaseFake) set(key string, lim *Limits, tokens, requests float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.levels(key, lim)
	b[0].level, b[1].level = tokens, requests
}

func (f *leaseFake) Take(context.Context, string, *Limits, int) (time.Duration, string, error) {
	f.mu.Lock()
	f.takes++
	f.mu.Unlock()
	return 0, "", nil
}

func (f *leaseFake) Settle(_ context.Context, _ string, _ *Limits, _ int, rl *portico.RateLimit, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rl != nil {
		f.views = append(f.views, "view")
	}
	return nil
}

func (f *leaseFake) Lease(_ context.Context, key string, lim *Limits, back, need, want Grant) (Grant, time.Duration, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.views = append(f.views, "lease")
	b := f.levels(key, lim)
	b[0].level = min(float64(lim.TokenBurst), b[0].level+float64(back.Tokens))
	b[1].level = min(float64(lim.RequestBurst), b[1].level+float64(back.Requests))
	call := leaseCall{back: back, need: need, want: want}
	short := func(i int, g int, rate float64) time.Duration {
		if d := float64(g) - b[i].level; d > 0 {
			return time.Duration(d / rate * float64(time.Second))
		}
		return 0
	}
	if float64(need.Tokens) > b[0].level || float64(need.Requests) > b[1].level {
		f.leases = append(f.leases, call)
		which := "tokens"
		if float64(need.Tokens) <= b[0].level {
			which = "requests"
		}
		w := max(short(0, want.Tokens, lim.tokenRate()), short(1, want.Requests, lim.requestRate()), 1)
		return Grant{}, w, which, nil
	}
	call.got = Grant{Requests: max(need.Requests, min(want.Requests, int(b[1].level))), Tokens: max(need.Tokens, min(want.Tokens, int(b[0].level)))}
	b[0].level -= float64(call.got.Tokens)
	b[1].level -= float64(call.got.Requests)
	f.leases = append(f.leases, call)
	return call.got, 0, "", nil
}

func (f *leaseFake) calls() []leaseCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.leases)
}

// usageModel answers with usage in + out.
func usageModel(in, out int) portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Usage: portico.Usage{InputTokens: in, OutputTokens: out}}, nil
	})
}

func fixedEstimate(n int) portico.Estimator {
	return portico.EstimatorFunc(func(*portico.Request) int { return n })
}

func TestSharingConfig(t *testing.T) {
	lim := Limits{Requests: 6000, RequestBurst: 1000}
	for _, tc := range []struct {
		cfg  Config
		want string // in the error; "" for none
	}{
		{Config{Limits: lim, Sharing: Leased, Shared: Shared{Store: newLeaseFake()}}, ""},
		{Config{Limits: lim, Sharing: Strict, Shared: Shared{Store: newFakeStore()}}, ""},
		{Config{Limits: lim, Shared: Shared{Store: newFakeStore()}}, ""},
		{Config{Limits: lim, Sharing: Leased}, "ratelimit: Config.Sharing leased without Config.Shared.Store"},
		{Config{Limits: lim, Sharing: Strict}, "ratelimit: Config.Sharing strict without Config.Shared.Store"},
		{Config{Limits: lim, Sharing: Leased, Shared: Shared{Store: newFakeStore()}}, "does not implement LeaseStore"},
		{Config{Limits: lim, Sharing: 7, Shared: Shared{Store: newLeaseFake()}}, "unknown Config.Sharing Sharing(7)"},
	} {
		_, err := New(tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.cfg.Sharing, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.cfg.Sharing, err, tc.want)
		}
	}
}

// TestAutoLeasesLargeLimits: Auto leases where a lease holds ten calls
// of every bucket (a RequestBurst of 1,000, a TokenBurst of 1,000 times
// the default N_max), and asks the store on every call below.
func TestAutoLeasesLargeLimits(t *testing.T) {
	for _, tc := range []struct {
		lim    Limits
		leased bool
	}{
		{Limits{Requests: 5}, false},
		{Limits{Requests: 999}, false},
		{Limits{Requests: 1000}, true},
		{Limits{Requests: 60, RequestBurst: 1000}, true},
		{Limits{Tokens: 1_024_000}, true},
		{Limits{Tokens: 1_023_999}, false},
		{Limits{Requests: 5000, Tokens: 2_000_000}, true}, // a provider account's
		{Limits{Requests: 600, Tokens: 200_000}, false},   // a tenant's plan
		{Limits{Requests: 5000, Tokens: 200_000}, false},  // one bucket too small
		{Limits{Requests: 600, Tokens: 2_000_000}, false}, // the other
	} {
		f := newLeaseFake()
		l, err := New(Config{Limits: tc.lim, Estimator: fixedEstimate(1), Shared: Shared{Store: f}})
		if err != nil {
			t.Fatal(err)
		}
		m := l.Wrap(usageModel(1, 1))
		for range 3 {
			if _, err := m.Generate(context.Background(), &portico.Request{Model: "m"}); err != nil {
				t.Fatal(err)
			}
		}
		leases, takes := len(f.calls()), f.takes
		if got := leases > 0; got != tc.leased || leases+takes == 0 || (leases > 0 && takes > 0) {
			t.Errorf("%+v: %d leases, %d takes, want leased %v", tc.lim, leases, takes, tc.leased)
		}
	}
}

// TestLeaseAsksTwiceItsDemand: a key's leases double with its calls, from
// the one call an idle key's first lease holds up to a hundredth of the
// burst: 600 calls at 60,000 a minute cost leases of 1, 2, 4, ..., 512
// then 600.
func TestLeaseAsksTwiceItsDemand(t *testing.T) {
	f := newLeaseFake()
	l, err := New(Config{Limits: Limits{Requests: 60_000}, Sharing: Leased, Shared: Shared{Store: f}})
	if err != nil {
		t.Fatal(err)
	}
	m := l.Wrap(usageModel(1, 1))
	for range 1023 + 600 {
		if _, err := m.Generate(context.Background(), &portico.Request{Model: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	var wants []int
	for _, c := range f.calls() {
		wants = append(wants, c.got.Requests)
	}
	if want := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600}; !slices.Equal(wants, want) {
		t.Errorf("leases %v, want %v", wants, want)
	}
}

// TestLeaseRefundsStayWithinTheLease: a call's refund goes back to the
// lease, never beyond what the lease was granted; the rest is owed to
// the store and given back with the next lease, with what the lease
// still held.
func TestLeaseRefundsStayWithinTheLease(t *testing.T) {
	f := newLeaseFake()
	l, err := New(Config{Limits: Limits{Tokens: 6_000_000}, Sharing: Leased, Estimator: fixedEstimate(50),
		Shared: Shared{Store: f}})
	if err != nil {
		t.Fatal(err)
	}
	release := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{})}
	m := l.Wrap(portico.ModelFunc(func(_ context.Context, req *portico.Request) (*portico.Response, error) {
		if ch := release[req.MaxOutputTokens]; ch != nil {
			<-ch
		}
		return &portico.Response{Usage: portico.Usage{InputTokens: 50, OutputTokens: 0}}, nil // 50 of 100 back
	}))
	call := func(id int) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := m.Generate(context.Background(), &portico.Request{Model: "m", MaxOutputTokens: id})
			done <- err
		}()
		return done
	}
	// Reserves 51 and 52: the first lease is 51 (the call); the second,
	// asked with 51 taken, 102, holding 50 once the call took its 52.
	a := call(1)
	waitLeases(t, f, 1)
	b := call(2)
	waitLeases(t, f, 2)
	close(release[2]) // 2 tokens back: the lease holds 52 of its 102
	if err := <-b; err != nil {
		t.Fatal(err)
	}
	close(release[1]) // 1 back: 53
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), &portico.Request{Model: "m", MaxOutputTokens: 60}); err != nil { // 110: a new lease
		t.Fatal(err)
	}
	got := f.calls()
	if len(got) != 3 || got[0].got.Tokens != 51 || got[1].got.Tokens != 102 || got[2].back.Tokens != 53 {
		t.Fatalf("leases %+v, want 51, then 102, then 53 given back", got)
	}

	// Beyond the lease: a lease of exactly one call's 100, whose refund
	// of 60 arrives after the lease was drawn down by a second call's.
	f2 := newLeaseFake()
	l2, err := New(Config{Limits: Limits{Tokens: 6_000_000}, Sharing: Leased, Estimator: fixedEstimate(50),
		Shared: Shared{Store: f2}})
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	m2 := l2.Wrap(portico.ModelFunc(func(_ context.Context, req *portico.Request) (*portico.Response, error) {
		if req.MaxOutputTokens == 50 {
			<-hold
		}
		return &portico.Response{Usage: portico.Usage{InputTokens: 40, OutputTokens: 0}}, nil
	}))
	first := make(chan error, 1)
	go func() {
		_, err := m2.Generate(context.Background(), &portico.Request{Model: "m", MaxOutputTokens: 50})
		first <- err
	}()
	waitLeases(t, f2, 1) // lease 1: 100, held 0
	// lease 2: 200 asked (100 taken), 101 held after this call's 99;
	// its 59 back: 160 held.
	if _, err := m2.Generate(context.Background(), &portico.Request{Model: "m", MaxOutputTokens: 49}); err != nil {
		t.Fatal(err)
	}
	close(hold) // the first call's 60 back: 40 fit the lease of 200, 20 owed
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// 210: more than the 200 the lease holds, less than the 220 it would
	// hold if refunds could lift it beyond its grant.
	if _, err := m2.Generate(context.Background(), &portico.Request{Model: "m", MaxOutputTokens: 160}); err != nil {
		t.Fatal(err)
	}
	got = f2.calls()
	if len(got) != 3 || got[1].got.Tokens != 200 || got[2].back.Tokens != 220 {
		t.Fatalf("leases %+v, want the second of 200 and 200 + 20 owed given back", got)
	}
}

// waitLeases waits until f has seen n leases.
func waitLeases(t *testing.T, f *leaseFake, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(f.calls()) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d leases, want %d", len(f.calls()), n)
		}
	}
}

// TestLeaseRefusalRemembered: a refused lease is remembered until the
// store would hold the lease asked for: the calls meanwhile are refused
// without asking, with what is left of the wait as their RetryAfter.
func TestLeaseRefusalRemembered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newLeaseFake()
		lim := Limits{Requests: 6000, RequestBurst: 1000} // 100 a second
		l, err := New(Config{Limits: lim, Sharing: Leased, Shared: Shared{Store: f}})
		if err != nil {
			t.Fatal(err)
		}
		m := l.Wrap(usageModel(1, 1))
		req := &portico.Request{Model: "m"}
		f.set("0:|0:/m", &lim, 0, 0)
		_, err = m.Generate(context.Background(), req)
		if ra := portico.RetryAfterOf(err); ra != 10*time.Millisecond {
			t.Fatalf("first call: %v, RetryAfter %v, want 10ms", err, ra)
		}
		time.Sleep(4 * time.Millisecond)
		_, err = m.Generate(context.Background(), req)
		if ra := portico.RetryAfterOf(err); ra != 6*time.Millisecond || len(f.calls()) != 1 {
			t.Fatalf("4 ms later: %v, RetryAfter %v after %d leases, want 6ms after 1", err, ra, len(f.calls()))
		}
		// At the wait's end the store holds 1 of the 4 asked (twice the
		// two calls): a lease of 1. The next call asks 2, refused for 20 ms.
		time.Sleep(6 * time.Millisecond)
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		_, err = m.Generate(context.Background(), req)
		if ra := portico.RetryAfterOf(err); ra != 20*time.Millisecond || len(f.calls()) != 3 {
			t.Fatalf("after a lease of 1: %v, RetryAfter %v after %d leases, want 20ms after 3", err, ra, len(f.calls()))
		}
		time.Sleep(20 * time.Millisecond)
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if c := f.calls(); len(c) != 4 || c[1].got.Requests != 1 || c[3].got.Requests != 2 {
			t.Fatalf("leases %+v, want a second of 1 and a fourth of 2", c)
		}
	})
}

// TestLeaseEndsAfterATerm: a lease admits calls for a twelfth of the
// Period; the next call gives back what it held and takes a new one.
func TestLeaseEndsAfterATerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newLeaseFake()
		l, err := New(Config{Limits: Limits{Requests: 60_000}, Sharing: Leased, Shared: Shared{Store: f}})
		if err != nil {
			t.Fatal(err)
		}
		m := l.Wrap(usageModel(1, 1))
		req := &portico.Request{Model: "m"}
		for range 2 { // leases of 1, then 2: 1 left
			if _, err := m.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5*time.Second - time.Nanosecond)
		if _, err := m.Generate(context.Background(), req); err != nil { // the last of the second lease
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), req); err != nil { // a third lease
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		c := f.calls()
		if len(c) != 4 || c[3].back.Requests != c[2].got.Requests-1 {
			t.Fatalf("leases %+v, want a fourth giving back all but one of the third", c)
		}
	})
}

// TestLeaseProviderView: a provider's view caps what the lease holds at
// once and reaches the store before the next lease.
func TestLeaseProviderView(t *testing.T) {
	f := newLeaseFake()
	l, err := New(Config{Limits: Limits{Requests: 60_000}, Sharing: Leased, Shared: Shared{Store: f}})
	if err != nil {
		t.Fatal(err)
	}
	view := &portico.RateLimit{Requests: portico.Quota{Known: true, Remaining: 0, Limit: 60_000, Reset: time.Second}}
	n := 0
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		n++
		if n == 4 {
			return &portico.Response{RateLimit: view}, nil
		}
		return &portico.Response{}, nil
	}))
	for range 5 { // leases of 1, 2, 4 (3 calls left in it, cut to 0 by the view)
		if _, err := m.Generate(context.Background(), &portico.Request{Model: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"lease", "lease", "lease", "view", "lease"}; !slices.Equal(f.views, want) {
		t.Errorf("store saw %v, want %v", f.views, want)
	}
	if c := f.calls(); c[3].back.Requests != 0 {
		t.Errorf("gave back %d after the view said none remained, want 0", c[3].back.Requests)
	}
}
