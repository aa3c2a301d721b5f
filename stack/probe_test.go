package stack

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
)

// probeLog records each probe the prober reports: route, class, time.
type probeLog struct {
	mu  sync.Mutex
	got []string
	at  []time.Duration
	t0  time.Time
}

func (l *probeLog) on(route string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	class := "ok"
	if err != nil {
		class = portico.ClassOf(err).String()
	}
	l.got = append(l.got, route+" "+class)
	l.at = append(l.at, time.Since(l.t0))
}

// probeStack builds a stack over routes with a prober of interval, and
// closes it at the end of the test.
func probeStack(t *testing.T, p Probe, routes ...Route) *Stack {
	t.Helper()
	p.Request = &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "ping")}}
	s, err := New(Config{Routes: routes, Probe: &p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestProbeRevokedFallback: a fallback whose key was revoked (401,
// Unusable) has its breaker open within one Interval, with no user
// request at all, after one call to it; the healthy primary stays
// closed; each probe asks for one output token.
func TestProbeRevokedFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &probeLog{t0: time.Now()}
		primary := modeltest.NewFake()
		revoked := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(401)))
		s := probeStack(t, Probe{Interval: 10 * time.Second, OnProbe: l.on},
			route("primary", primary), route("fallback", revoked))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := s.Breaker("fallback").State(); got != breaker.Open {
			t.Errorf("fallback's breaker after one interval = %v, want open", got)
		}
		if got := s.Breaker("primary").State(); got != breaker.Closed {
			t.Errorf("primary's breaker = %v, want closed", got)
		}
		if got := revoked.Count(); got != 1 {
			t.Errorf("calls to the revoked fallback = %d, want 1", got)
		}
		if c := revoked.Calls(); len(c) != 1 || c[0].Request.MaxOutputTokens != 1 {
			t.Errorf("probe's MaxOutputTokens: calls %+v, want one of 1 token", c)
		}
		want := []string{"primary ok", "fallback unusable"}
		if !slices.Equal(l.got, want) {
			t.Errorf("probes = %q, want %q", l.got, want)
		}
		// A later request skips the fallback: the primary answers it.
		if _, err := s.Generate(context.Background(), hello); err != nil {
			t.Fatal(err)
		}
		if got := revoked.Count(); got != 1 {
			t.Errorf("calls to the revoked fallback after a request = %d, want 1", got)
		}
	})
}

// TestProbeHealedPrimary: a primary whose breaker a 401 opened is
// probed when its open interval (30 s) ends, and its breaker closes
// then, with no user request after the one that opened it.
func TestProbeHealedPrimary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &probeLog{t0: time.Now()}
		primary := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(401)), modeltest.Answer("ok"))
		backup := modeltest.NewFake()
		s := probeStack(t, Probe{Interval: 10 * time.Second, OnProbe: l.on},
			route("primary", primary), route("backup", backup))
		if _, err := s.Generate(context.Background(), hello); err != nil {
			t.Fatal(err) // the backup answers
		}
		if got := s.Breaker("primary").State(); got != breaker.Open {
			t.Fatalf("primary's breaker after a 401 = %v, want open", got)
		}
		time.Sleep(30*time.Second + time.Millisecond)
		synctest.Wait()
		if got := s.Breaker("primary").State(); got != breaker.Closed {
			t.Errorf("primary's breaker at 30s = %v, want closed", got)
		}
		// The primary is probed once, at 30 s, when its breaker takes a
		// probe; the backup, busy at 0 s, at 10, 20 and 30 s.
		want := []string{"backup ok", "backup ok", "primary ok", "backup ok"}
		if !slices.Equal(l.got, want) {
			t.Errorf("probes = %q, want %q", l.got, want)
		}
		if got := primary.Count(); got != 2 {
			t.Errorf("calls to the primary = %d, want 2 (the request, the probe)", got)
		}
	})
}

// TestProbeRate: over five idle routes, a cap of 2 per Interval sends
// exactly 2 probes per Interval, the routes taken in turn: 20 probes in
// 10 intervals, 4 per route.
func TestProbeRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &probeLog{t0: time.Now()}
		var fakes []*modeltest.Fake
		var routes []Route
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			f := modeltest.NewFake()
			fakes = append(fakes, f)
			routes = append(routes, route(n, f))
		}
		probeStack(t, Probe{Interval: time.Second, MaxPerInterval: 2, OnProbe: l.on}, routes...)
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		for i, f := range fakes {
			if got := f.Count(); got != 4 {
				t.Errorf("probes of route %d = %d, want 4", i, got)
			}
		}
		per := map[time.Duration]int{}
		for _, at := range l.at {
			per[at.Truncate(time.Second)]++
		}
		for at, n := range per {
			if n != 2 {
				t.Errorf("probes at %v = %d, want 2", at, n)
			}
		}
		if len(l.at) != 20 {
			t.Errorf("probes in 10 intervals = %d, want 20", len(l.at))
		}
	})
}

// TestProbeSkipsBusyRoute: a route called by users within the last
// Interval is not probed; the idle fallback is, once per Interval.
func TestProbeSkipsBusyRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &probeLog{t0: time.Now()}
		primary, fallback := modeltest.NewFake(), modeltest.NewFake()
		s := probeStack(t, Probe{Interval: time.Second, OnProbe: l.on},
			route("primary", primary), route("fallback", fallback))
		for range 20 { // a request every 500 ms for 10 s
			if _, err := s.Generate(context.Background(), hello); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		synctest.Wait()
		if got := primary.Count(); got != 20 {
			t.Errorf("calls to the busy primary = %d, want 20 (the requests only)", got)
		}
		if got := fallback.Count(); got != 10 {
			t.Errorf("probes of the idle fallback = %d, want 10", got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if got := fallback.Count(); got != 10 {
			t.Errorf("probes after Close = %d, want 10", got-10)
		}
	})
}

// TestProbeCooldown: a probe answered 429 with a Retry-After of 25 s
// cools the route down in the group's Cooldowns (the store a
// redisstore.Cooldowns would share), until 25 s later, and the route
// is not probed again before then.
func TestProbeCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &probeLog{t0: time.Now()}
		limited := modeltest.NewFake(modeltest.Fail(modeltest.RateLimitError(25*time.Second)), modeltest.Answer("ok"))
		cd, err := fallback.NewMemoryCooldowns(0)
		if err != nil {
			t.Fatal(err)
		}
		p := Probe{Interval: 10 * time.Second, OnProbe: l.on,
			Request: &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "ping")}}}
		s, err := New(Config{Routes: []Route{route("a", modeltest.NewFake()), route("limited", limited)},
			Fallback: fallback.Config{Cooldowns: cd}, Probe: &p})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		time.Sleep(10*time.Second + time.Millisecond)
		if got, want := cd.Until("limited").Sub(l.t0), 35*time.Second; got != want {
			t.Errorf("limited's cooldown ends at %v, want %v", got, want)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		want := []string{"a ok", "limited rate_limited", "a ok", "a ok", "limited ok", "a ok"}
		if !slices.Equal(l.got, want) {
			t.Errorf("probes = %q, want %q", l.got, want)
		}
		if got := limited.Count(); got != 2 {
			t.Errorf("probes of the limited route = %d, want 2 (at 10 s, at 40 s)", got)
		}
	})
}

// TestProbeConfig: New refuses a Probe without a Request, with a request
// Validate refuses, or with a negative field, and starts no goroutine.
func TestProbeConfig(t *testing.T) {
	ping := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "ping")}}
	for _, c := range []struct {
		p    Probe
		want string
	}{
		{Probe{}, "stack: Config.Probe.Request is nil"},
		{Probe{Request: &portico.Request{}}, "stack: Config.Probe.Request: "},
		{Probe{Request: ping, Interval: -time.Second}, "stack: Config.Probe: Interval, MaxPerInterval and Timeout must not be negative"},
		{Probe{Request: ping, MaxPerInterval: -1}, "stack: Config.Probe: Interval, MaxPerInterval and Timeout must not be negative"},
	} {
		_, err := New(Config{Routes: []Route{route("a", modeltest.NewFake())}, Probe: &c.p})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("New(Probe %+v) = %v, want %q", c.p, err, c.want)
		}
	}
}

// TestUpdateAfterCloseProber: after Close, an Update whose Config has a
// Probe builds a prober it does not start; a later Update, and a second
// Close, stop that prober without a panic.
func TestUpdateAfterCloseProber(t *testing.T) {
	p := Probe{Interval: time.Hour, Request: hello}
	cfg := Config{Routes: []Route{route("a", modeltest.NewFake())}, Probe: &p}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.Update(cfg); err != nil {
			t.Fatalf("Update %d = %v, want nil", i, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
