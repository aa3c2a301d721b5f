package ratelimit

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// plans is a Config.Tier over a tenant-to-plan table that a test may
// change; a tenant not in it has no plan ("").
type plans struct {
	mu sync.Mutex
	m  map[string]string
}

func (p *plans) tier(r *portico.Request) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[r.Identity.ClientKey]
}

func (p *plans) set(tenant, plan string) { p.mu.Lock(); p.m[tenant] = plan; p.mu.Unlock() }

// calls makes n calls of r through m, all of which must pass.
func calls(t *testing.T, m portico.Model, r *portico.Request, n int) {
	t.Helper()
	for i := range n {
		if _, err := m.Generate(t.Context(), r); err != nil {
			t.Fatalf("%s's call %d of %d: %v", r.Identity.ClientKey, i+1, n, err)
		}
	}
}

// reqLevel returns the request bucket's level of req's key now.
func (l *Limiter) reqLevel(r *portico.Request) float64 {
	e := l.acquire(l.keyOf(r), r, mono.Now())
	defer e.mu.Unlock()
	level, _ := e.req.at(mono.Now())
	return level
}

// tieredConfig: free tenants 10 requests a minute, pro 600, the rest (no
// plan, or a plan with no tier) the default 100.
func tieredConfig(p *plans) Config {
	return Config{
		Limits: Limits{Requests: 100},
		Key:    ByClient,
		Tier:   p.tier,
		Tiers:  map[string]Limits{"free": {Requests: 10}, "pro": {Requests: 600}},
	}
}

// TestTiers: one Limiter, two tiers and the default: in one minute the free
// tenant is refused at its 11th call (RetryAfter 6 s, one request per 6 s)
// while the pro tenant passes 600 and the default tenants 100, a tenant
// whose plan is not a tier included; a minute later the free tenant has
// its 10 again. A tiered key's happy path allocates nothing.
func TestTiers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &plans{m: map[string]string{"f": "free", "p": "pro", "g": "gold"}}
		l := mustNew(t, tieredConfig(p))
		m := l.Wrap(okModel(0, 0))
		calls(t, m, req("f", 0), 10)
		wantRetryAfter(t, "free's 11th call", m, req("f", 0), 6*time.Second)
		calls(t, m, req("p", 0), 600)
		wantRetryAfter(t, "pro's 601st call", m, req("p", 0), 100*time.Millisecond)
		for _, c := range []string{"d", "g"} { // no plan; a plan with no tier
			calls(t, m, req(c, 0), 100)
			wantRetryAfter(t, c+"'s 101st call", m, req(c, 0), 600*time.Millisecond)
		}
		for c, want := range map[string]uint8{"f": 1, "p": 2, "d": 0, "g": 0} {
			if e := l.entryOf(req(c, 0)); e == nil || e.tier != want {
				t.Errorf("entry of %q: %+v, want tier %d", c, e, want)
			}
		}
		time.Sleep(time.Minute)
		calls(t, m, req("f", 0), 10)
		wantRetryAfter(t, "free's 11th call a minute later", m, req("f", 0), 6*time.Second)
	})
}

// TestTierZeroAllocs: a tiered key's admitted call allocates nothing, its
// price checked against its tier's bucket, smaller than the largest.
func TestTierZeroAllocs(t *testing.T) {
	p := &plans{m: map[string]string{"p": "pro"}}
	l := mustNew(t, Config{
		Limits: Limits{Tokens: 1e12, Period: time.Second}, DefaultMaxTokens: 100, Key: ByClient, Tier: p.tier,
		Tiers: map[string]Limits{"pro": {Requests: 1e9, Tokens: 1e11, Period: time.Second, MaxInFlight: 100}},
	})
	resp := &portico.Response{Usage: portico.Usage{InputTokens: 7, OutputTokens: 10}}
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil }))
	r := req("p", 0)
	calls(t, m, r, 1)
	if a := testing.AllocsPerRun(1000, func() { m.Generate(t.Context(), r) }); a != 0 {
		t.Errorf("a pro tenant's admitted call allocates %v times, want 0", a)
	}
	if e := l.entryOf(r); e.tier != 1 {
		t.Errorf("entry's tier = %d, want 1 (pro)", e.tier)
	}
}

// TestTierTokenBucket: the default has no token bucket and the enterprise
// tier has one (1000 tokens a minute): enterprise calls are priced and
// charged, and refused over its capacity or when they cannot be priced,
// while the default tenants' calls, priced alike, pass unpriced.
func TestTierTokenBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &plans{m: map[string]string{"e": "enterprise"}}
		l := mustNew(t, Config{
			Limits:           Limits{Requests: 100},
			Key:              ByClient,
			DefaultMaxTokens: RequireMaxTokens,
			Estimator:        fixedEstimator(100),
			Tier:             p.tier,
			Tiers:            map[string]Limits{"enterprise": {Tokens: 1000}},
		})
		m := l.Wrap(okModel(100, 400))
		if _, err := m.Generate(t.Context(), req("e", 400)); err != nil {
			t.Fatal(err)
		}
		if got := l.levelOf(req("e", 0), time.Now()); got != 500 {
			t.Errorf("enterprise level after a call of 500 = %v, want 500", got)
		}
		// 600 tokens, 500 left: 100 at 1000/min is 6 s.
		wantRetryAfter(t, "enterprise's 600 tokens", m, req("e", 500), 6*time.Second)
		_, err := m.Generate(t.Context(), req("e", 1000))
		var ce *CapacityError
		if !errors.As(err, &ce) || *ce != (CapacityError{Input: 100, MaxOutput: 1000, Capacity: 1000}) || portico.ClassOf(err) != portico.Incompatible {
			t.Errorf("enterprise's 1100 tokens = %v, want Incompatible CapacityError{100, 1000, 1000}", err)
		}
		if _, err := m.Generate(t.Context(), req("e", 0)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("enterprise call without MaxOutputTokens or DefaultMaxTokens = %v, want ErrBadRequest", err)
		}
		if n := l.inflightOf(req("e", 0)); n != 0 {
			t.Errorf("enterprise in flight after its refusals = %d, want 0", n)
		}
		for _, maxOut := range []int{0, 1_000_000, -1} {
			if _, err := m.Generate(t.Context(), req("d", maxOut)); err != nil {
				t.Errorf("default tenant, MaxOutputTokens %d, no token bucket: %v, want admitted", maxOut, err)
			}
		}
	})
}

// TestTierTokenBurst: pricing checks the largest TokenBurst of any tier
// before the key is known, and the key's own after: a free call over its
// tier's 500 is refused with the free capacity, taking no slot, where a
// default call of the same size passes; a pro call over the default's 1000
// passes in pro's 100,000.
func TestTierTokenBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &plans{m: map[string]string{"f": "free", "p": "pro"}}
		l := mustNew(t, Config{
			Limits:    Limits{Tokens: 1000, MaxInFlight: 4},
			Key:       ByClient,
			Estimator: fixedEstimator(100),
			Tier:      p.tier,
			Tiers:     map[string]Limits{"free": {Tokens: 1000, TokenBurst: 500, MaxInFlight: 1}, "pro": {Tokens: 100_000}},
		})
		m := l.Wrap(okModel(0, 0))
		_, err := m.Generate(t.Context(), req("f", 500))
		var ce *CapacityError
		if !errors.As(err, &ce) || *ce != (CapacityError{Input: 100, MaxOutput: 500, Capacity: 500}) {
			t.Errorf("free's 600 tokens = %v, want CapacityError{100, 500, 500}", err)
		}
		if n := l.inflightOf(req("f", 0)); n != 0 {
			t.Errorf("free in flight after the refusal = %d, want 0", n)
		}
		calls(t, m, req("d", 500), 1)
		calls(t, m, req("p", 5000), 1)
		_, err = m.Generate(t.Context(), req("d", 5000))
		if !errors.As(err, &ce) || *ce != (CapacityError{Input: 100, MaxOutput: 5000, Capacity: 1000}) {
			t.Errorf("default's 5100 tokens = %v, want CapacityError{100, 5000, 1000}", err)
		}
		_, err = m.Generate(t.Context(), req("p", 200_000))
		if !errors.As(err, &ce) || *ce != (CapacityError{Input: 100, MaxOutput: 200_000, Capacity: 100_000}) {
			t.Errorf("pro's 200,100 tokens = %v, want CapacityError{100, 200000, 100000}", err)
		}
	})
}

// TestSetTierLimit: SetTierLimit changes the keys of its tier only, live:
// the free tenant waiting 6 s for its 11th call goes at 1 s once free has
// 60 a minute, the pro tenant's bucket keeps its 500 capped at the new
// burst 300, the provider's view adopted by pro is cleared, and the
// default tenant keeps its limits. An unknown tier or invalid limits change
// nothing.
func TestSetTierLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &plans{m: map[string]string{"f": "free", "p": "pro"}}
		cfg := tieredConfig(p)
		cfg.Mode = Wait
		l := mustNew(t, cfg)
		m := l.Wrap(okModel(0, 0))
		calls(t, m, req("f", 0), 10)
		calls(t, m, req("p", 0), 100)
		calls(t, m, req("d", 0), 10)
		pro := l.entryOf(req("p", 0))
		pro.mu.Lock()
		pro.req.provRate, pro.req.provUntil = 0.01, mono.Now()+time.Hour // as a provider's view would
		pro.mu.Unlock()
		start := time.Now()
		admitted := make(chan time.Duration)
		go func() {
			if _, err := m.Generate(t.Context(), req("f", 0)); err != nil {
				t.Error(err)
			}
			admitted <- time.Since(start)
		}()
		synctest.Wait()
		if err := l.SetTierLimit("free", Limits{Requests: 60, RequestBurst: 10}); err != nil {
			t.Fatal(err)
		}
		if err := l.SetTierLimit("pro", Limits{Requests: 600, RequestBurst: 300}); err != nil {
			t.Fatal(err)
		}
		if got := <-admitted; got != time.Second {
			t.Errorf("free's 11th call admitted after %v, want 1s (60/min once SetTierLimit replanned it)", got)
		}
		now := time.Since(start)
		if got, want := l.reqLevel(req("p", 0)), min(300, 500+10*now.Seconds()); got != want {
			t.Errorf("pro level after SetTierLimit(burst 300) = %v, want %v", got, want)
		}
		pro.mu.Lock()
		if pro.req.provUntil != noView || pro.req.provRate != 0 {
			t.Errorf("pro's provider view after SetTierLimit: rate %v until %v, want cleared", pro.req.provRate, pro.req.provUntil)
		}
		pro.mu.Unlock()
		if e := l.entryOf(req("d", 0)); e.lim.Requests != 100 {
			t.Errorf("default tenant's Requests after SetTierLimit = %d, want 100", e.lim.Requests)
		}
		for _, tc := range []struct {
			tier string
			lim  Limits
			want string
		}{
			{"gold", Limits{Requests: 1}, `ratelimit: SetTierLimit of tier "gold", not in Config.Tiers`},
			{"free", Limits{Requests: -1}, `ratelimit: tier "free": negative Limits.Requests (-1)`},
			{"free", Limits{}, `ratelimit: tier "free": no limit: set Limits.Requests, Tokens or MaxInFlight, or Config.Concurrency`},
		} {
			if err := l.SetTierLimit(tc.tier, tc.lim); err == nil || err.Error() != tc.want {
				t.Errorf("SetTierLimit(%q, %+v) = %v, want %q", tc.tier, tc.lim, err, tc.want)
			}
		}
		if e := l.entryOf(req("f", 0)); *e.lim != (Limits{Requests: 60, RequestBurst: 10, Period: time.Minute}) {
			t.Errorf("free's limits after the refused changes = %+v, want 60/min, burst 10", *e.lim)
		}
	})
}

// TestSetLimitLeavesTiers: SetLimit changes the default's keys, existing
// and new, and leaves the tiered keys and the tiers alone.
func TestSetLimitLeavesTiers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &plans{m: map[string]string{"f": "free", "f2": "free"}}
		l := mustNew(t, tieredConfig(p))
		m := l.Wrap(okModel(0, 0))
		calls(t, m, req("f", 0), 5)
		calls(t, m, req("d", 0), 5)
		if err := l.SetLimit(Limits{Requests: 50}); err != nil {
			t.Fatal(err)
		}
		if got := l.reqLevel(req("d", 0)); got != 50 {
			t.Errorf("default tenant's level after SetLimit(50) = %v, want 50 (95 capped)", got)
		}
		if got := l.reqLevel(req("f", 0)); got != 5 {
			t.Errorf("free tenant's level after SetLimit(50) = %v, want 5", got)
		}
		calls(t, m, req("f", 0), 5)
		wantRetryAfter(t, "the free tenant's 11th call after SetLimit(50)", m, req("f", 0), 6*time.Second)
		calls(t, m, req("d2", 0), 50)
		wantRetryAfter(t, "a new default tenant's 51st call", m, req("d2", 0), 1200*time.Millisecond)
		calls(t, m, req("f2", 0), 10)
		wantRetryAfter(t, "a new free tenant's 11th call", m, req("f2", 0), 6*time.Second)
	})
}

// TestTierAfterEviction: a tenant moved to another plan keeps its tier's
// limits while its entry lives, and takes the new tier's once its idle
// entry was evicted and made again.
func TestTierAfterEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &plans{m: map[string]string{"t": "free"}}
		l := mustNew(t, tieredConfig(p))
		m := l.Wrap(okModel(0, 0))
		calls(t, m, req("t", 0), 10)
		p.set("t", "pro")
		wantRetryAfter(t, "the 11th call after the move to pro, entry live", m, req("t", 0), 6*time.Second)
		if p := l.janitorPeriod(); p != time.Minute {
			t.Fatalf("janitorPeriod = %v, want 1m", p)
		}
		time.Sleep(2 * time.Minute)
		if k := l.Keys(); k != 0 {
			t.Fatalf("keys two janitor periods after the last call = %d, want 0", k)
		}
		calls(t, m, req("t", 0), 600)
		wantRetryAfter(t, "pro's 601st call", m, req("t", 0), 100*time.Millisecond)
		if e := l.entryOf(req("t", 0)); e.tier != 2 || e.lim.Requests != 600 {
			t.Errorf("entry made again: tier %d, Requests %d; want 2 (pro), 600", e.tier, e.lim.Requests)
		}
	})
}

// TestTierJanitorPeriod: the janitor waits for the slowest tier's refill.
func TestTierJanitorPeriod(t *testing.T) {
	p := &plans{}
	cfg := tieredConfig(p)
	cfg.Tiers["slow"] = Limits{Requests: 10, Period: time.Hour}
	if got := mustNew(t, cfg).janitorPeriod(); got != time.Hour {
		t.Errorf("janitorPeriod with a tier of 10 an hour = %v, want 1h", got)
	}
}

// TestTierConfig: New's errors for Tier and Tiers name the tier.
func TestTierConfig(t *testing.T) {
	tier := func(*portico.Request) string { return "" }
	many := map[string]Limits{}
	for i := range 256 {
		many[strconv.Itoa(i)] = Limits{Requests: 1}
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Limits: Limits{Requests: 1}, Tiers: map[string]Limits{"a": {Requests: 1}}}, "ratelimit: Config.Tiers without Config.Tier"},
		{Config{Limits: Limits{Requests: 1}, Tier: tier}, "ratelimit: Config.Tier without Config.Tiers"},
		{Config{Limits: Limits{Requests: 1}, Tier: tier, Tiers: many}, "ratelimit: Config.Tiers has 256 tiers, more than 255"},
		{Config{Limits: Limits{Requests: 1}, Tier: tier, Tiers: map[string]Limits{"b": {Requests: 1}, "a": {Requests: -2}, "c": {}}},
			`ratelimit: Config.Tiers["a"]: negative Limits.Requests (-2)`},
		{Config{Limits: Limits{Requests: 1}, Tier: tier, Tiers: map[string]Limits{"free": {}}},
			`ratelimit: Config.Tiers["free"]: no limit: set Limits.Requests, Tokens or MaxInFlight, or Config.Concurrency`},
		{Config{Limits: Limits{Requests: 1}, Tier: tier, Tiers: map[string]Limits{"free": {TokenBurst: 5, Requests: 1}}},
			`ratelimit: Config.Tiers["free"]: Limits.TokenBurst without Tokens`},
		{Config{Limits: Limits{Requests: 1}, DefaultMaxTokens: 500, Tier: tier, Tiers: map[string]Limits{"free": {Tokens: 1000, TokenBurst: 500}}},
			`ratelimit: Config.Tiers["free"]: Config.DefaultMaxTokens 500 leaves no room for input in TokenBurst 500: no call with the default could ever be admitted`},
		{Config{Limits: Limits{MaxInFlight: 2}, Queue: Queue{Size: 4}, Tier: tier, Tiers: map[string]Limits{"free": {Requests: 1}}},
			`ratelimit: Config.Tiers["free"]: Limits.MaxInFlight 0 with a Config.Queue.Size and no Config.Concurrency`},
		{Config{Limits: Limits{Tokens: 10000}, DefaultMaxTokens: 100, Tier: tier, Tiers: map[string]Limits{"free": {Tokens: 1000}},
			Shared: Shared{Store: newFakeStore(), FailOpen: true, Instances: 10}},
			`ratelimit: Config.Tiers["free"]: Config.Shared.Instances 10 leaves a TokenBurst share of 100, no room for Config.DefaultMaxTokens 100`},
	} {
		if _, err := New(tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("New(Tiers %v) = %v, want %q", tc.cfg.Tiers, err, tc.want)
		}
	}
	// Each tier is normalized as Limits are.
	l := mustNew(t, Config{Limits: Limits{Requests: 1}, Tier: tier, Tiers: map[string]Limits{"pro": {Tokens: 600}}})
	if got := *l.limitsOf(1); got != (Limits{Tokens: 600, TokenBurst: 600, Period: time.Minute}) {
		t.Errorf("pro's limits = %+v, want TokenBurst 600 and Period 1m filled in", got)
	}
}

// TestTiersShared: with a Store, a tiered key's calls give the store its
// tier's limits, read on every call (the store keeps no entry here), and
// the new ones after SetTierLimit; its in-flight cap is its tier's, in
// the process; failing open, it gets its tier's share of the buckets.
func TestTiersShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		p := &plans{m: map[string]string{"f": "free", "p": "pro"}}
		l := mustNew(t, Config{
			Limits:           Limits{Tokens: 10_000, MaxInFlight: 8},
			DefaultMaxTokens: 10,
			Estimator:        fixedEstimator(0),
			Key:              ByClient,
			Tier:             p.tier,
			Tiers:            map[string]Limits{"free": {Requests: 10, Tokens: 1000, MaxInFlight: 1}, "pro": {Requests: 600}},
			Shared:           Shared{Store: f, FailOpen: true, Instances: 2},
		})
		release := make(chan struct{})
		m := l.Wrap(portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
			if r.MaxOutputTokens == 7 {
				<-release
			}
			return &portico.Response{}, nil
		}))
		last := func() Limits { f.mu.Lock(); defer f.mu.Unlock(); return f.lims[len(f.lims)-1] }
		for _, tc := range []struct {
			client string
			want   Limits
		}{
			{"f", Limits{Requests: 10, RequestBurst: 10, Tokens: 1000, TokenBurst: 1000, Period: time.Minute, MaxInFlight: 1}},
			{"p", Limits{Requests: 600, RequestBurst: 600, Period: time.Minute}},
			{"d", Limits{Tokens: 10_000, TokenBurst: 10_000, Period: time.Minute, MaxInFlight: 8}},
		} {
			calls(t, m, req(tc.client, 0), 1)
			if got := last(); got != tc.want {
				t.Errorf("%s's Take got limits %+v, want %+v", tc.client, got, tc.want)
			}
		}
		held := make(chan error)
		go func() { _, err := m.Generate(t.Context(), req("f", 7)); held <- err }()
		synctest.Wait()
		if _, err := m.Generate(t.Context(), req("f", 0)); !errors.Is(err, ErrOverloaded) {
			t.Errorf("free's second call in flight = %v, want ErrOverloaded (its tier's MaxInFlight 1)", err)
		}
		calls(t, m, req("d", 0), 1) // the default's cap is 8
		release <- struct{}{}
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		if err := l.SetTierLimit("free", Limits{Requests: 20, Tokens: 1000, MaxInFlight: 1}); err != nil {
			t.Fatal(err)
		}
		calls(t, m, req("f", 0), 1)
		if got := last(); got.Requests != 20 || got.RequestBurst != 20 {
			t.Errorf("free's Take after SetTierLimit(20) got %+v, want Requests 20, burst 20", got)
		}
		if err := l.SetTierLimit("pro", Limits{Requests: 600, MaxInFlight: 1}); err != nil {
			t.Fatal(err)
		}
		go func() { _, err := m.Generate(t.Context(), req("p", 7)); held <- err }()
		synctest.Wait()
		if _, err := m.Generate(t.Context(), req("p", 0)); !errors.Is(err, ErrOverloaded) {
			t.Errorf("pro's second call in flight after SetTierLimit(MaxInFlight 1) = %v, want ErrOverloaded", err)
		}
		release <- struct{}{}
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		// The store fails: each local share holds what its key had not
		// used of it (the default's first call is admitted at once), and a
		// minute later free holds its share, half its 20 requests and 1000
		// tokens.
		f.setDown(true)
		calls(t, m, req("d", 0), 1)
		time.Sleep(time.Minute)
		calls(t, m, req("f", 10), 10)
		// Its 11th waits until the share holds half a request (1/N of
		// the call, internal/failopen.Lead): 3 s at 10 a minute.
		wantRetryAfter(t, "free's 11th call in the outage", m, req("f", 10), 3*time.Second)
		wantRetryAfter(t, "free's call over its share of 500 tokens", m, req("f", 600), 0)
		calls(t, m, req("d", 600), 1) // the default's share is 5000
		if e := l.shared.local.entryOf(req("f", 0)); e == nil || e.tier != 1 {
			t.Errorf("free's entry in the local share: %+v, want tier 1", e)
		}
	})
}
