package stack

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/inflight"
	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/respcache"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/spend"
	"github.com/portico-llm/portico/throttle"
)

// mustUpdate is s.Update(cfg), failing t on an error.
func mustUpdate(t *testing.T, s *Stack, cfg Config) {
	t.Helper()
	if err := s.Update(cfg); err != nil {
		t.Fatal(err)
	}
}

// split counts by route the answers to n requests.
func split(t *testing.T, s *Stack, n int) map[string]int {
	t.Helper()
	by := map[string]int{}
	for range n {
		resp, err := s.Generate(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		by[resp.Route]++
	}
	return by
}

// TestUpdateMovesTheSplit: Weighted{9, 1} sends 900 ± 42.7 of 1,000
// requests to a; after Update to Weighted{1, 9}, 100 ± 42.7.
func TestUpdateMovesTheSplit(t *testing.T) {
	const n = 1000
	cfg := Config{Routes: []Route{route("a", modeltest.NewFake()), route("b", modeltest.NewFake())}, Kind: Weighted{9, 1}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := split(t, s, n)
	cfg.Kind = Weighted{1, 9}
	mustUpdate(t, s, cfg)
	after := split(t, s, n)
	t.Logf("a's share: %d of %d at 9:1, %d at 1:9 (bounds ± %.1f)", before["a"], n, after["a"], binom.Bound(n, 0.9))
	if !binom.Within(before["a"], n, 0.9) || !binom.Within(after["a"], n, 0.1) {
		t.Errorf("a answered %d then %d of %d; want 900 then 100, ± %.1f", before["a"], after["a"], n, binom.Bound(n, 0.9))
	}
}

// TestUpdateTightensTheBucketAtItsLevel: a route's bucket of 10 requests
// a minute, 7 of them spent, keeps its level of 3 through an Update to 5 a
// minute (capacity 5): 3 calls pass, the 4th is refused, and the next
// token comes 12 s later (the new rate): none at 11 s (the old rate's
// 6 s are past), one at 13 s. A new limiter would
// have let 5 pass at once.
func TestUpdateTightensTheBucketAtItsLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := route("a", modeltest.NewFake())
		r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 10}}
		cfg := Config{Routes: []Route{r}}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l := s.Limiter("a")
		calls := func(n int) (passed int, err error) {
			for range n {
				if _, err = s.Generate(t.Context(), hello); err != nil {
					return passed, err
				}
				passed++
			}
			return passed, nil
		}
		if n, err := calls(7); n != 7 {
			t.Fatalf("%d calls passed before the Update, want 7: %v", n, err)
		}
		r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 5}}
		cfg.Routes = []Route{r}
		mustUpdate(t, s, cfg)
		if s.Limiter("a") != l {
			t.Fatal("Update replaced the route's limiter, whose Config changed only in its Limits")
		}
		n, err := calls(4)
		if n != 3 || portico.RefuserOf(err) != portico.RouteLimit {
			t.Fatalf("after the Update %d calls passed, then %v; want 3, then the route limit's refusal", n, err)
		}
		time.Sleep(11 * time.Second)
		if n, _ := calls(1); n != 0 {
			t.Error("a call passed 11 s after the bucket emptied at 5 a minute (one token per 12 s)")
		}
		time.Sleep(2 * time.Second)
		if n, err := calls(1); n != 1 {
			t.Errorf("no call passed 13 s after the bucket emptied at 5 a minute: %v", err)
		}
	})
}

// TestUpdateKeepsAnOpenBreaker: a's breaker, opened by two failures
// (ConsecutiveFailures(2), OpenFor a minute), is the same and still open
// after an Update that adds a route c and changes the group's weights:
// requests skip a without a call until its minute is over.
func TestUpdateKeepsAnOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		ra := route("a", a)
		ra.Breaker = breaker.Config{Trip: breaker.ConsecutiveFailures(2), OpenFor: time.Minute}
		ra.Skip = SkipRetry
		cfg := Config{Routes: []Route{ra, route("b", modeltest.NewFake())}}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		split(t, s, 2)
		brk := s.Breaker("a")
		if brk.State() != breaker.Open || a.Count() != 2 {
			t.Fatalf("a's breaker %v after %d calls, want open after 2", brk.State(), a.Count())
		}
		ra.Breaker = breaker.Config{Trip: breaker.ConsecutiveFailures(2), OpenFor: time.Minute} // a new closure of the same code
		cfg.Routes = []Route{ra, route("b", modeltest.NewFake()), route("c", modeltest.NewFake())}
		cfg.Kind = Weighted{8, 1, 1}
		mustUpdate(t, s, cfg)
		if s.Breaker("a") != brk || brk.State() != breaker.Open {
			t.Fatalf("after the Update a's breaker is %p %v, want %p open", s.Breaker("a"), s.Breaker("a").State(), brk)
		}
		if by := split(t, s, 100); by["a"] != 0 || a.Count() != 2 {
			t.Errorf("after the Update %v answered, a called %d times; want none by a, 2 calls", by, a.Count())
		}
		time.Sleep(2 * time.Minute)
		split(t, s, 20)
		if a.Count() == 2 {
			t.Error("a not called again after its breaker's minute")
		}
	})
}

// TestUpdateDrains: a call in flight on route old, which an Update
// removes, finishes on the configuration it started with and answers; a
// call in flight on kept route a holds a's only slot (MaxInFlight 1)
// across the Update, so the next call to a is refused, as it would be
// without one.
func TestUpdateDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		held := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			select {
			case <-release:
				return &portico.Response{Text: "late", FinishReason: portico.FinishStop}, nil
			case <-ctx.Done():
				return nil, portico.FromContext(ctx)
			}
		})
		old := route("old", held)
		a := route("a", held)
		a.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: 1}}
		s, err := New(Config{Routes: []Route{old}, Groups: []Group{{Name: "old", Routes: []string{"old"}}}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Routes: []Route{a, old}, Groups: []Group{{Name: "a", Routes: []string{"a"}}, {Name: "old", Routes: []string{"old"}}}}
		mustUpdate(t, s, cfg)
		var wg sync.WaitGroup
		answers := make(chan string, 2)
		for _, model := range []string{"old", "a"} {
			wg.Go(func() {
				req := hello.Clone()
				req.Model = model
				resp, err := s.Generate(t.Context(), req)
				if err != nil {
					t.Errorf("call in flight on %s across the Update: %v", model, err)
					return
				}
				answers <- resp.Route + ":" + resp.Text
			})
		}
		synctest.Wait()
		cfg.Routes, cfg.Groups = cfg.Routes[:1], cfg.Groups[:1] // old removed
		mustUpdate(t, s, cfg)
		req := hello.Clone()
		req.Model = "a"
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := s.Generate(ctx, req); portico.RefuserOf(err) != portico.RouteLimit {
			t.Errorf("a call to a while its one slot is held across the Update: %v, want the route limit's refusal", err)
		}
		close(release)
		wg.Wait()
		close(answers)
		got := map[string]bool{}
		for a := range answers {
			got[a] = true
		}
		if !got["old:late"] || !got["a:late"] {
			t.Errorf("answers %v, want old:late and a:late", got)
		}
	})
}

// TestUpdateRefusesBadInput: an Update with two routes of one name fails
// with a Permanent *portico.Error, and the configuration in force still
// serves, with its breaker.
func TestUpdateRefusesBadInput(t *testing.T) {
	cfg := Config{Routes: []Route{route("a", modeltest.NewFake())}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	brk := s.Breaker("a")
	for _, bad := range []Config{
		{},
		{Routes: []Route{route("a", modeltest.NewFake()), route("a", modeltest.NewFake())}},
		{Routes: []Route{{Route: portico.Route{Name: "a", Model: modeltest.NewFake()}, Limiter: &ratelimit.Config{Limits: ratelimit.Limits{Requests: -1}}}}},
	} {
		err := s.Update(bad)
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Permanent || pe.Reason != "invalid stack config" {
			t.Errorf("Update(%d routes) = %v, want a Permanent invalid stack config", len(bad.Routes), err)
		}
	}
	if resp, err := s.Generate(t.Context(), hello); err != nil || resp.Route != "a" || s.Breaker("a") != brk {
		t.Errorf("after the refused Updates: %+v, %v, breaker kept %v; want a's answer and its breaker", resp, err, s.Breaker("a") == brk)
	}
	var zero Stack
	if err := zero.Update(cfg); portico.ClassOf(err) != portico.Permanent {
		t.Errorf("Update on a Stack New did not make = %v, want Permanent", err)
	}
}

// TestUpdateRefusedLimitChangesNothing: an Update whose new limits one
// kept limiter refuses (a token bucket too small for DefaultMaxTokens)
// leaves every kept limiter's limits as they were.
func TestUpdateRefusedLimitChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := route("a", modeltest.NewFake()), route("b", modeltest.NewFake())
		a.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 2}}
		b.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Tokens: 100_000}, DefaultMaxTokens: 1000}
		cfg := Config{Routes: []Route{a, b}, Groups: []Group{{Name: "a", Routes: []string{"a"}}, {Name: "b", Routes: []string{"b"}}}}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 100}}
		b.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Tokens: 10}, DefaultMaxTokens: 1000}
		cfg.Routes = []Route{a, b}
		if err := s.Update(cfg); portico.ClassOf(err) != portico.Permanent {
			t.Fatalf("Update to a token bucket smaller than DefaultMaxTokens = %v, want Permanent", err)
		}
		req := hello.Clone()
		req.Model = "a"
		passed := 0
		for range 3 {
			if _, err := s.Generate(t.Context(), req); err == nil {
				passed++
			}
		}
		if passed != 2 {
			t.Errorf("%d calls passed a's bucket of 2 after the refused Update, want 2", passed)
		}
	})
}

// TestUpdateUnderLoad: 8 goroutines, half streaming, call the stack while
// 200 Updates swap between configurations that add and remove a route
// and change weights and limits: every call answers, once (the routes'
// calls add up to the answers).
func TestUpdateUnderLoad(t *testing.T) {
	var fakes []*modeltest.Fake
	fake := func() portico.Model {
		f := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "a b c", FinishReason: portico.FinishStop}})
		fakes = append(fakes, f)
		return f
	}
	limited := func(name string, rpm int) Route {
		r := route(name, fake())
		r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: rpm}}
		return r
	}
	cfgs := []Config{
		{Routes: []Route{limited("a", 1e9), route("b", fake())}, Kind: Weighted{1, 1}},
		{Routes: []Route{limited("a", 2e9), route("b", fake()), route("c", fake())}, Kind: Weighted{1, 2, 3}},
		{Routes: []Route{route("c", fake()), limited("a", 1e9)}},
	}
	s, err := New(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var mu sync.Mutex
	calls := 0
	for g := range 8 {
		wg.Go(func() {
			for first := true; first || ctx.Err() == nil; first = false { // one call at least
				req := hello.Clone()
				var text string
				if g%2 == 0 {
					req.OnChunk = func(c portico.Chunk) error { text += c.Text; return nil }
				}
				resp, err := s.Generate(context.Background(), req)
				if err != nil || resp.Text != "a b c" || g%2 == 0 && text != "a b c" {
					t.Errorf("call during Updates: %+v, %v (streamed %q)", resp, err, text)
					return
				}
				mu.Lock()
				calls++
				mu.Unlock()
			}
		})
	}
	for i := range 200 {
		mustUpdate(t, s, cfgs[i%len(cfgs)])
	}
	stop()
	wg.Wait()
	sent := 0
	for _, f := range fakes {
		sent += f.Count()
	}
	t.Logf("%d calls answered during 200 Updates", calls)
	if sent != calls || calls < 8 {
		t.Errorf("%d calls answered, %d sent to the routes; want as many, 8 at least", calls, sent)
	}
}

// TestUpdateStopsTheProber: an Update to a configuration without Probe
// stops the prober's goroutine; one with Probe starts another, which
// Close stops, and an Update after Close starts none.
func TestUpdateStopsTheProber(t *testing.T) {
	before := goleak.IgnoreCurrent()
	probe := &Probe{Interval: time.Hour, Request: hello}
	cfg := Config{Routes: []Route{route("a", modeltest.NewFake())}, Probe: probe}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if goleak.Find(before) == nil {
		t.Fatal("no prober goroutine after New with Probe")
	}
	cfg.Probe = nil
	mustUpdate(t, s, cfg)
	if err := goleak.Find(before); err != nil {
		t.Fatalf("after an Update without Probe: %v", err)
	}
	cfg.Probe = probe
	mustUpdate(t, s, cfg)
	if goleak.Find(before) == nil {
		t.Fatal("no prober goroutine after an Update with Probe")
	}
	s.Close()
	mustUpdate(t, s, cfg)
	if err := goleak.Find(before); err != nil {
		t.Errorf("after Close and an Update with Probe: %v", err)
	}
}

// TestSame: what remember counts as the same Config.
func TestSame(t *testing.T) {
	f := func() {}
	one, two := breaker.ConsecutiveFailures(1), breaker.ConsecutiveFailures(2)
	cd, _ := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Requests: 1}})
	for _, c := range []struct {
		a, b any
		want bool
	}{
		{breaker.Config{}, breaker.Config{}, true},
		{breaker.Config{OpenFor: time.Second}, breaker.Config{OpenFor: 2 * time.Second}, false},
		{breaker.Config{Trip: breaker.DefaultTrip}, breaker.Config{Trip: breaker.DefaultTrip}, true},
		{breaker.Config{Trip: breaker.DefaultTrip}, breaker.Config{}, false},
		{breaker.Config{Trip: one}, breaker.Config{Trip: two}, true}, // the same code
		{f, f, true},
		{[]int{1}, []int{1}, true},
		{[]int{1}, []int(nil), false},
		{map[string]int{"a": 1}, map[string]int{"a": 1}, true},
		{map[string]int{"a": 1}, map[string]int{"b": 1}, false},
		{cd, cd, true},
		{&ratelimit.Config{}, &ratelimit.Config{}, false}, // pointers by identity
		{any(nil), any(nil), true},
		{fmt.Stringer(nil), time.Second, false},
	} {
		if got := same(c.a, c.b); got != c.want {
			t.Errorf("same(%#v, %#v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestUpdateKeepsBudgetsAndCooldowns: route a's retry budget (a fixed
// allowance of 2 retries, spent by one request that failed three times)
// is still spent after an Update that adds route c, so a's next failure
// is not retried; and route b, cooled down for a minute by its 429, is
// still skipped without a call after the Update, until its minute ends.
func TestUpdateKeepsBudgetsAndCooldowns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		b := modeltest.NewFake(modeltest.Fail(modeltest.RateLimitError(time.Minute)), modeltest.Answer("b"))
		ra, rb := route("a", a), route("b", b)
		ra.Skip, rb.Skip = SkipBreaker, SkipRetry
		ra.Retry.Budget = retry.Budget{NoRefill: true, Burst: 2}
		ra.Retry.Backoff = retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
		cfg := Config{Routes: []Route{ra, rb, route("c", modeltest.NewFake(modeltest.Answer("c")))}}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.Generate(t.Context(), hello)
		if err != nil || resp.Route != "c" || a.Count() != 3 || b.Count() != 1 {
			t.Fatalf("Generate = %+v, %v, calls a %d b %d; want c's answer after 3 calls to a and b's 429", resp, err, a.Count(), b.Count())
		}
		rtr := s.Retrier("a")
		cfg.Routes = append(cfg.Routes, route("d", modeltest.NewFake()))
		mustUpdate(t, s, cfg)
		if s.Retrier("a") != rtr || rtr.BudgetLevel("a", "") != 0 {
			t.Fatalf("after the Update a's retrier kept %v, budget %v; want the same, empty", s.Retrier("a") == rtr, rtr.BudgetLevel("a", ""))
		}
		resp, err = s.Generate(t.Context(), hello)
		if err != nil || resp.Route != "c" || a.Count() != 4 || b.Count() != 1 {
			t.Errorf("after the Update: %+v, %v, calls a %d b %d; want c's answer after one call to a (no budget) and none to b (cooling down)", resp, err, a.Count(), b.Count())
		}
		time.Sleep(time.Minute)
		if resp, err = s.Generate(t.Context(), hello); err != nil || resp.Route != "b" {
			t.Errorf("a minute after b's 429: %+v, %v; want b's answer", resp, err)
		}
	})
}

// TestAccessorsReadTheConfigurationInForce: after an Update, every
// accessor of the Stack New returned (a method without arguments, or
// with a route's name, returning one pointer) returns the layer of the
// configuration in force, not the handle's own empty fields.
func TestAccessorsReadTheConfigurationInForce(t *testing.T) {
	r := route("a", modeltest.NewFake())
	r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 10}}
	r.Hedge = &hedge.Config{Delay: time.Second}
	r.Throttle = &throttle.Config{}
	cfg := Config{Routes: []Route{r}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 10}},
		Cache: &respcache.Config{}, Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 1}}},
		InFlight: &inflight.Config{Max: 1, Shared: portico.Shared[inflight.Store]{Store: &inflight.Memory{}}}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Routes = append(cfg.Routes, route("b", modeltest.NewFake()))
	mustUpdate(t, s, cfg)
	v, checked := reflect.ValueOf(s), 0
	for i := range v.NumMethod() {
		m, name := v.Method(i), v.Type().Method(i).Name
		mt := m.Type()
		if mt.NumOut() != 1 || mt.Out(0).Kind() != reflect.Pointer {
			continue
		}
		var out []reflect.Value
		switch {
		case mt.NumIn() == 0:
			out = m.Call(nil)
		case mt.NumIn() == 1 && mt.In(0).Kind() == reflect.String:
			out = m.Call([]reflect.Value{reflect.ValueOf("a")})
		default:
			continue
		}
		checked++
		if out[0].IsNil() {
			t.Errorf("%s returns nil after an Update: it reads the Stack's own fields, not now()'s", name)
		}
	}
	if checked < 9 { // ClientLimiter, Limiter, Breaker, Retrier, Hedger, Throttle, Cache, Spend, InFlight
		t.Errorf("%d accessors checked, want 9 at least", checked)
	}
}
