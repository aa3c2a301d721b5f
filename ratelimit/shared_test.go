package ratelimit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// fakeStore is a Store in memory, on the package's own buckets and the
// bubble's clock, that records what it was given and fails while down.
type fakeStore struct {
	mu      sync.Mutex
	epoch   time.Time
	tok     map[string]*bucket
	req     map[string]*bucket
	lims    []Limits // the limits of each Take
	settled []int    // each Settle's tokens
	views   int      // Settles with a provider view
	down    bool
}

var errDown = errors.New("fake store down")

func newFakeStore() *fakeStore {
	return &fakeStore{epoch: time.Now(), tok: map[string]*bucket{}, req: map[string]*bucket{}}
}

func (f *fakeStore) buckets(key string, lim *Limits, now time.Duration) (tok, req *bucket) {
	if lim.Tokens > 0 {
		if tok = f.tok[key]; tok == nil {
			b := newBucket(lim.tokenRate(), float64(lim.TokenBurst), now)
			tok, f.tok[key] = &b, &b
		}
	}
	if lim.Requests > 0 {
		if req = f.req[key]; req == nil {
			b := newBucket(lim.requestRate(), float64(lim.RequestBurst), now)
			req, f.req[key] = &b, &b
		}
	}
	return tok, req
}

func (f *fakeStore) Take(_ context.Context, key string, lim *Limits, cost int) (time.Duration, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return 0, "", errDown
	}
	f.lims = append(f.lims, *lim)
	now := time.Since(f.epoch)
	e := &entry{lim: lim}
	tok, req := f.buckets(key, lim, now)
	if tok != nil {
		e.tok = *tok
	}
	if req != nil {
		e.req = *req
	}
	ok, wait, which, _ := e.take(now, cost, nil, 0)
	if !ok {
		return wait, which, nil
	}
	if tok != nil {
		*tok = e.tok
	}
	if req != nil {
		*req = e.req
	}
	return 0, "", nil
}

func (f *fakeStore) Settle(_ context.Context, key string, lim *Limits, tokens int, rl *portico.RateLimit, hold time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errDown
	}
	f.settled = append(f.settled, tokens)
	if rl != nil {
		f.views++
	}
	tok, _ := f.buckets(key, lim, time.Since(f.epoch))
	if tok != nil && tokens > 0 {
		tok.refund(float64(tokens))
	}
	return nil
}

func (f *fakeStore) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

func TestSharedConfig(t *testing.T) {
	f := newFakeStore()
	lim := Limits{Tokens: 1000, Requests: 100}
	for _, tc := range []struct {
		cfg  Config
		want string // in the error; "" for none
	}{
		{Config{Limits: lim, DefaultMaxTokens: 50, Shared: Shared{Store: f}}, ""},
		{Config{Limits: lim, DefaultMaxTokens: 50, Shared: Shared{Store: f, FailOpen: true, Instances: 10}}, ""},
		{Config{Limits: lim, Shared: Shared{Store: f, Instances: -1}}, "negative Config.Shared.Instances"},
		{Config{Limits: lim, Shared: Shared{FailOpen: true, Instances: 2}}, "without a Store"},
		{Config{Limits: lim, Shared: Shared{Store: f, FailOpen: true}}, "FailOpen without Instances"},
		{Config{Limits: lim, Shared: Shared{Store: f, Instances: 3}}, "Instances without FailOpen"},
		// 1000/20 = 50 tokens a share: no room for a default of 50.
		{Config{Limits: lim, DefaultMaxTokens: 50, Shared: Shared{Store: f, FailOpen: true, Instances: 20}}, "TokenBurst share of 50"},
	} {
		_, err := New(tc.cfg)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), "ratelimit: ") || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("New(%+v) = %v, want an error naming %q", tc.cfg.Shared, err, tc.want)
		}
	}
}

// TestSharedBuckets: the buckets are the store's: two Limiters over one
// store share them, the refund goes back to it, and a wait follows the
// store's answer.
func TestSharedBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		cfg := Config{Limits: Limits{Tokens: 600, TokenBurst: 500}, Mode: Wait, Estimator: fixedEstimator(100), Shared: Shared{Store: f}}
		a, b := mustNew(t, cfg), mustNew(t, cfg)
		obs := &recorder{}
		ctx := portico.ContextWithObserver(t.Context(), obs)
		// 100 + 300 reserved, 100 + 100 used: 200 back.
		if _, err := a.Wrap(okModel(100, 100)).Generate(ctx, req("c", 300)); err != nil {
			t.Fatal(err)
		}
		if len(f.settled) != 1 || f.settled[0] != 200 {
			t.Fatalf("settled %v, want [200]", f.settled)
		}
		// 300 left in the store: b's call of 400 waits 100 tokens at 10/s.
		start := time.Now()
		if _, err := b.Wrap(okModel(200, 200)).Generate(ctx, req("c", 300)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("the other Limiter's call waited %v, want 10s", d)
		}
		if len(obs.events) != 1 || obs.events[0].Kind != portico.EventRateLimitWait || obs.events[0].Delay != 10*time.Second {
			t.Errorf("events = %+v, want one 10s wait", obs.events)
		}
		// A hedge does not wait: refused with the store's wait, as in
		// Reject mode (40s for 400 tokens at 10/s).
		hedge := req("c", 300)
		hedge.Hedge = true
		start = time.Now()
		_, err := b.Wrap(okModel(1, 1)).Generate(ctx, hedge)
		if ra := portico.RetryAfterOf(err); !errors.Is(err, ErrLimited) || ra != 40*time.Second || time.Since(start) != 0 {
			t.Errorf("hedge with the store empty = %v (RetryAfter %v) after %v, want ErrLimited, 40s, at once", err, ra, time.Since(start))
		}
		// Reject mode: refused with the store's wait.
		cfg.Mode = Reject
		_, err = mustNew(t, cfg).Wrap(okModel(1, 1)).Generate(ctx, req("c", 300))
		if ra := portico.RetryAfterOf(err); !errors.Is(err, ErrLimited) || ra != 40*time.Second {
			t.Errorf("call with the store empty = %v (RetryAfter %v), want ErrLimited after 40s", err, ra)
		}
		// SetLimit: the store gets the new limits with the next call.
		if err := a.SetLimit(Limits{Tokens: 1200, TokenBurst: 500}); err != nil {
			t.Fatal(err)
		}
		a.Wrap(okModel(1, 1)).Generate(ctx, req("c", 1))
		if got := f.lims[len(f.lims)-1]; got.Tokens != 1200 {
			t.Errorf("limits given to the store after SetLimit = %+v, want Tokens 1200", got)
		}
	})
}

// TestSharedFailure: while the store fails, a fail-open Limiter admits on
// its 1/N share (a call larger than the share is rate limited, not
// incompatible), a fail-closed one refuses naming its RefusedBy, both say
// so; when the store is back it decides again.
func TestSharedFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		lim := Limits{Tokens: 6000, TokenBurst: 1000, Requests: 40}
		open := mustNew(t, Config{Limits: lim, Estimator: fixedEstimator(10), Shared: Shared{Store: f, FailOpen: true, Instances: 4}})
		closed := mustNew(t, Config{Limits: lim, Estimator: fixedEstimator(10), Shared: Shared{Store: f}})
		obs := &recorder{}
		ctx := portico.ContextWithObserver(t.Context(), obs)
		f.setDown(true)
		// The share of a key this instance has not used is full, a quarter
		// of the limits: 10 requests, 250 tokens, from the first call.
		for i := range 11 {
			_, err := open.Wrap(okModel(10, 10)).Generate(ctx, req("c", 10))
			if want := i < 10; (err == nil) != want {
				t.Errorf("fail-open call %d = %v, want admitted: %v", i, err, want)
			}
		}
		_, err := open.Wrap(okModel(1, 1)).Generate(ctx, req("d", 500))
		if !errors.Is(err, ErrLimited) || portico.ClassOf(err) != portico.RateLimited {
			t.Errorf("call of 510 tokens over a share of 250 = %v, want RateLimited (ErrLimited)", err)
		}
		_, err = closed.Wrap(okModel(1, 1)).Generate(ctx, req("c", 10))
		var pe *portico.Error
		if !errors.Is(err, ErrStoreUnavailable) || !errors.Is(err, errDown) || !errors.As(err, &pe) || pe.Class != portico.Rejected || !pe.NotSent {
			t.Errorf("fail-closed call = %v, want Rejected, NotSent, wrapping ErrStoreUnavailable and the store's error", err)
		}
		// On one line, saying each thing once: during an outage every call logs this.
		if want := "portico: rejected by client_limit model m: ratelimit: shared store unavailable; fake store down"; err == nil || err.Error() != want {
			t.Errorf("fail-closed call = %q, want %q", err, want)
		}
		// Like every refusal of its Limiter, it names the Limiter's refuser.
		if by := portico.RefuserOf(err); by != portico.ClientLimit {
			t.Errorf("RefuserOf(fail-closed call of a client limiter) = %v, want client_limit", by)
		}
		route := mustNew(t, Config{Limits: lim, Estimator: fixedEstimator(10), RefusedBy: portico.RouteLimit, Shared: Shared{Store: f}})
		_, err = route.Wrap(okModel(1, 1)).Generate(t.Context(), req("c", 10))
		if by := portico.RefuserOf(err); !errors.Is(err, ErrStoreUnavailable) || by != portico.RouteLimit {
			t.Errorf("fail-closed call of a route limiter = %v, refused by %v, want ErrStoreUnavailable by route_limit", err, by)
		}
		n := map[string]int{}
		for _, e := range obs.events {
			if e.Kind == portico.EventSharedStore {
				n[e.Reason]++
			}
		}
		if n["ratelimit:fail_open"] != 12 || n["ratelimit:fail_closed"] != 1 {
			t.Errorf("shared-store events = %v, want 12 fail_open and 1 fail_closed", n)
		}
		if open.Keys() != 1 {
			t.Errorf("Keys() = %d, want 1: c's in the local share (d's call was refused before it)", open.Keys())
		}
		f.setDown(false)
		if _, err := closed.Wrap(okModel(1, 1)).Generate(ctx, req("c", 10)); err != nil || len(f.lims) != 1 {
			t.Errorf("call with the store back = %v after %d takes, want admitted by the store", err, len(f.lims))
		}
	})
}

// TestSharedInFlight: the in-flight cap stays in the process, before the
// store is asked.
func TestSharedInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		l := mustNew(t, Config{Limits: Limits{Requests: 100, MaxInFlight: 1}, Shared: Shared{Store: f}})
		m := l.Wrap(slowModel(time.Second, 1))
		go m.Generate(t.Context(), req("a", 1))
		synctest.Wait()
		if _, err := m.Generate(t.Context(), req("a", 1)); !errors.Is(err, ErrOverloaded) {
			t.Errorf("second call in flight = %v, want ErrOverloaded", err)
		}
		if len(f.lims) != 1 {
			t.Errorf("store asked %d times, want once (the shed call never reaches it)", len(f.lims))
		}
		if err := l.SetLimit(Limits{Requests: 100}); err == nil {
			t.Error("SetLimit removing MaxInFlight from a shared Limiter succeeded, want an error")
		}
		time.Sleep(time.Second)
	})
}

// TestSharedNameKeepsLimitersApart: two limiters on one store with the same
// key function keep their own buckets when their Shared.Name differs, and
// share them when it is the same (one limiter in two instances). Two
// requests per minute: a and b each admit two; a and a second a admit two
// between them.
func TestSharedNameKeepsLimitersApart(t *testing.T) {
	admitted := func(names ...string) int {
		f := newFakeStore()
		n := 0
		for _, name := range names {
			l := mustNew(t, Config{Limits: Limits{Requests: 2, Period: time.Minute}, Key: ByModel, Shared: Shared{Store: f, Name: name}})
			m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
				return &portico.Response{Text: "ok"}, nil
			}))
			for range 2 {
				if _, err := m.Generate(context.Background(), &portico.Request{Model: "m"}); err == nil {
					n++
				}
			}
		}
		return n
	}
	if n := admitted("route a", "route b"); n != 4 {
		t.Errorf("limiters named a and b admitted %d of 4, want 4: each has its own bucket", n)
	}
	if n := admitted("route a", "route a"); n != 2 {
		t.Errorf("two limiters named a admitted %d of 4, want 2: they share one bucket", n)
	}
}

// TestSharedKeysCannotCollide: the key a limiter gives its Store names
// its Shared.Name and its key so that no two tuples meet: an unnamed
// limiter whose key spells a named one's prefix and key ("1:a|m" against
// Name "a" and key "m"), and a key function's key that spells the default
// (client, model) key, keep their own buckets. Each admits its two.
func TestSharedKeysCannotCollide(t *testing.T) {
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok"}, nil
	})
	constKey := func(k string) func(*portico.Request) string { return func(*portico.Request) string { return k } }
	for _, tc := range []struct {
		name string
		a, b Config
	}{
		{"empty name", Config{Key: constKey("1:a|m")}, Config{Key: ByModel, Shared: Shared{Name: "a"}}},
		{"key function", Config{Key: constKey("1:c/m")}, Config{}},
	} {
		f := newFakeStore()
		n := 0
		for _, cfg := range []Config{tc.a, tc.b} {
			cfg.Limits = Limits{Requests: 2, Period: time.Minute}
			cfg.Shared.Store = f
			m := mustNew(t, cfg).Wrap(ok)
			for range 2 {
				req := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "c"}}
				if _, err := m.Generate(context.Background(), req); err == nil {
					n++
				}
			}
		}
		if n != 4 {
			t.Errorf("%s: two limiters admitted %d of 4, want 4: each has its own bucket", tc.name, n)
		}
	}
}
