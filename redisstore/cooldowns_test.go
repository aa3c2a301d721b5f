package redisstore

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/stack"
)

// instance is one instance of a service: its own client, Store, Cooldowns
// and stack, whose routes' Models count their calls.
type instance struct {
	s     *Store
	cool  *Cooldowns
	sets  *recorded // cool, as the stack sees it
	st    *stack.Stack
	calls map[string]*atomic.Int32
}

// recorded is a Cooldowns that records, for each key, the latest end the
// stack Set: the end it meant, before any refresh of the local copy.
type recorded struct {
	*Cooldowns
	mu  sync.Mutex
	set map[string]time.Time
}

func (r *recorded) Set(key string, until time.Time) {
	r.mu.Lock()
	if until.After(r.set[key]) {
		r.set[key] = until
	}
	r.mu.Unlock()
	r.Cooldowns.Set(key, until)
}

// end returns the latest end Set for key, the zero Time if none.
func (r *recorded) end(key string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set[key]
}

// setup describes an instance: the routes, in order, with their Quota;
// those in failing fail with failure, the others answer; shareBreakers
// sets each route's Breaker.Shared to the Cooldowns.
type setup struct {
	cfg           Config
	routes        []struct{ name, quota string }
	failure       error
	failing       []string
	shareBreakers bool
}

func newInstance(t *testing.T, srv *redistest.Server, su setup) *instance {
	t.Helper()
	in := &instance{s: newStore(t, srv, su.cfg), calls: make(map[string]*atomic.Int32)}
	in.cool = in.s.Cooldowns()
	t.Cleanup(in.cool.Close)
	in.sets = &recorded{Cooldowns: in.cool, set: make(map[string]time.Time)}
	var rs []stack.Route
	for _, r := range su.routes {
		n := new(atomic.Int32)
		in.calls[r.name] = n
		fails := slices.Contains(su.failing, r.name)
		model := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			n.Add(1)
			if fails {
				return nil, su.failure
			}
			return &portico.Response{Text: "ok"}, nil
		})
		sr := stack.Route{Route: portico.Route{Name: r.name, Model: model, Capabilities: portico.Capabilities{Quota: r.quota}}}
		if su.shareBreakers {
			sr.Breaker.Shared = in.sets
		}
		rs = append(rs, sr)
	}
	var err error
	if in.st, err = stack.New(stack.Config{Routes: rs, Fallback: fallback.Config{Cooldowns: in.sets}}); err != nil {
		t.Fatal(err)
	}
	return in
}

// twoRoutes is a primary and a secondary, of no Quota.
var twoRoutes = []struct{ name, quota string }{{"primary", ""}, {"secondary", ""}}

// reasons returns the hops of resp as "route:reason".
func reasons(resp *portico.Response) []string {
	var s []string
	for _, h := range resp.Hops {
		s = append(s, h.Route+":"+h.Reason)
	}
	return s
}

// TestCooldownsTenInstances: a 429 with Retry-After 5 s that one of ten
// instances sees makes the nine others skip the route (and every route of
// its Quota) from their first read of the set after the write, without
// calling it once they know; each learns the cooldown's end no earlier
// than the instance that saw it, and at most the two transits later. With
// shared breakers, a breaker one instance trips on a 401 makes the others
// skip the route as unavailable, for the breaker's 30 s (or, when the
// breaker learns it open between the group's look and the call, have the
// breaker refuse the call: Rejected, the route not called either), and
// their breakers report Open.
//
// The documented bound, Refresh + 3 x Timeout, is that mechanism timed by
// a scheduler that runs each goroutine when its timer fires. On a starved
// CPU (2 cores, -race, every module's tests at once) it is not, so the
// test checks the mechanism on the clients' own record of their scripts
// (a hook): once an instance's read that began after the write has
// ended, the next request it starts skips the route (its local copy is
// raised before its next read begins); the staleness is logged.
//
// The ends are compared as the local copies hold them, on the wall clock,
// which the server's TIME reads too (it runs on this host). Instance 0's
// end is the one its stack Set, not its copy, which its own reads may have
// raised by then. Each read raises the copy to its reply's time plus the
// time left, so a copy is late by at most the write's transit and its
// slowest read's (its reply arrives before the next read begins), plus
// three roundings to the millisecond; it is never early unless the wall
// clock is stepped back against the monotonic one (a VM's clock
// corrected), which the test measures and allows, logged.
func TestCooldownsTenInstances(t *testing.T) {
	const refresh, timeout, ra = 20 * time.Millisecond, 100 * time.Millisecond, 5 * time.Second
	bound := refresh + 3*timeout
	limited := &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: ra}
	for _, tc := range []struct {
		name    string
		su      setup
		key     string        // the cooldown's key
		first   []string      // the hops of the request that fails
		skipped []string      // the hops of a request once the cooldown is known
		orElse  []string      // other hops such a request may have, nil for none
		lasts   time.Duration // the cooldown
	}{
		{"route", setup{routes: twoRoutes, failure: limited}, "primary", []string{"primary:rate_limited"}, []string{"primary:cooldown"}, nil, ra},
		{"quota", setup{routes: []struct{ name, quota string }{{"primary", "acct"}, {"sibling", "acct"}, {"secondary", ""}}, failure: limited}, "acct",
			[]string{"primary:rate_limited", "sibling:cooldown"}, []string{"primary:cooldown", "sibling:cooldown"}, nil, ra},
		{"breaker", setup{routes: twoRoutes, failure: &portico.Error{Class: portico.Unusable, Status: 401}, shareBreakers: true}, "breaker:primary",
			[]string{"primary:unusable"}, []string{"primary:unavailable"}, []string{"primary:rejected"}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			var ins []*instance
			var ran []*scripts
			for i := range 10 {
				su := tc.su
				c := srv.Client(t)
				ran = append(ran, &scripts{})
				c.AddHook(ran[i])
				// Probe: a read that a starved CPU timed out is retried
				// at the next Refresh, not a second later.
				su.cfg = Config{Client: c, Timeout: timeout, Refresh: refresh, Probe: refresh}
				if i == 0 { // the others' primaries would answer: only what they learn keeps them away
					su.failing = []string{"primary"}
				}
				ins = append(ins, newInstance(t, srv, su))
			}
			ctx := context.Background()
			req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
			base := time.Now()
			// Every instance has dialed and read the set once: a warm-up
			// cooldown reaches them all.
			ins[0].cool.Set("warm-up", time.Now().Add(2*time.Second)) // shorter than the cooldown: the set's TTL stays the cooldown's
			for i, in := range ins {
				waitFor(t, "instance "+strconv.Itoa(i)+" to read the warm-up cooldown", func() bool { return !in.cool.Until("warm-up").IsZero() })
			}
			for _, in := range ins[1:] { // the primary answers the others
				if resp, err := in.st.Generate(ctx, req); err != nil || resp.Route != "primary" {
					t.Fatalf("before the 429: Generate = %v, %v; want primary's answer", resp, err)
				}
			}
			start, ahead := time.Now(), wallAhead(base)
			resp, err := ins[0].st.Generate(ctx, req)
			if err != nil || resp.Route != "secondary" || !slices.Equal(reasons(resp), tc.first) {
				t.Fatalf("instance 0: Generate = %v (hops %v), %v; want secondary's answer, hops %v", resp, reasons(resp), err, tc.first)
			}
			until0 := ins[0].sets.end(tc.key).Round(0) // on the wall clock, as the copies hold it
			if until0.IsZero() {
				t.Fatalf("instance 0 did not Set %q", tc.key)
			}
			// Each other instance sends a request every millisecond until one
			// skips the cooling routes.
			learnt := make([]time.Duration, len(ins))
			lastPrimary := make([]time.Time, len(ins)) // when the last request primary answered began
			var wg sync.WaitGroup
			for i := 1; i < len(ins); i++ {
				wg.Go(func() {
					tick := time.NewTicker(time.Millisecond)
					defer tick.Stop()
					for ; ; <-tick.C {
						sent := time.Now()
						resp, err := ins[i].st.Generate(ctx, req)
						if err != nil {
							t.Errorf("instance %d: Generate = %v", i, err)
							return
						}
						if resp.Route == "secondary" {
							learnt[i] = time.Since(start)
							if got := reasons(resp); !slices.Equal(got, tc.skipped) && (tc.orElse == nil || !slices.Equal(got, tc.orElse)) {
								t.Errorf("instance %d: hops %v, want %v", i, got, tc.skipped)
							}
							return
						}
						lastPrimary[i] = sent
						if time.Since(start) > 10*time.Second {
							t.Errorf("instance %d still calls primary 10 s after instance 0's failure", i)
							return
						}
					}
				})
			}
			wg.Wait()
			// The write: instance 0's first set after the 429 that succeeded
			// (one that timed out may have run too, before it: first is the
			// first attempt's start). The others may have learnt from one
			// that timed out, the retry not yet done: wait for it.
			var first time.Time
			var write scriptRun
			waitFor(t, "instance 0 to write the cooldown", func() bool {
				for _, r := range ran[0].runs(setCooldowns) {
					if r.start.Before(start) {
						continue
					}
					if first.IsZero() {
						first = r.start
					}
					if r.err == nil {
						write = r
						return true
					}
				}
				return false
			})
			var worst, sum time.Duration
			leaked := 0
			for i := 1; i < len(ins); i++ {
				in := ins[i]
				worst, sum = max(worst, learnt[i]), sum+learnt[i]
				leaked += int(in.calls["primary"].Load()) - 1
				// Its first read that began after the write ended, and the
				// next one, which begins once the copy is raised.
				var read, next scriptRun
				waitFor(t, "instance "+strconv.Itoa(i)+" to read the set twice after the write", func() bool {
					read, next = scriptRun{}, scriptRun{}
					for _, r := range ran[i].runs(getCooldowns) {
						switch {
						case read.end.IsZero() && r.start.After(write.end) && r.err == nil:
							read = r
						case !read.end.IsZero() && r.start.After(read.start):
							next = r
							return true
						}
					}
					return false
				})
				if !lastPrimary[i].Before(next.start) {
					t.Errorf("instance %d: a request sent %v after its first read of the set since the write ended called primary; want the route skipped",
						i, lastPrimary[i].Sub(read.end))
				}
				// Never early, unless the wall clock was stepped back (by
				// back, measured); late by at most the write's transit (from
				// the request that saw the failure, which set it, to the
				// write's reply), the slowest read's since the write began
				// (its reply is timed before the next read begins, or
				// before now) and three roundings: the time left sent and
				// the server's time at the write rounded up, at the read
				// down. The times on the wall clock, as the ends.
				u, now := in.cool.Until(tc.key), time.Now()
				back := max(0, ahead-wallAhead(base))
				slowest := time.Duration(0)
				rs := ran[i].runs(getCooldowns)
				for k, r := range rs {
					if r.err != nil || !r.end.After(first) || !r.start.Before(now) {
						continue // saw no write, raised nothing, or began after u was read
					}
					replied := now
					if k+1 < len(rs) && rs[k+1].start.Before(now) {
						replied = rs[k+1].start
					}
					slowest = max(slowest, onWall(r.start, replied))
				}
				late := onWall(start, write.end) + slowest + 3*time.Millisecond
				if back >= time.Microsecond { // below, the two clocks' nanosecond rounding
					t.Logf("instance %d: the wall clock was stepped back %v against the monotonic one during the test", i, back)
				}
				if u.Before(until0.Add(-back)) || u.After(until0.Add(late)) {
					t.Errorf("instance %d: cooldown ends %v after instance 0's, want within [%v, %v]", i, u.Sub(until0), -back, late)
				}
				// Once it knows, the routes are not called: one more request skips them.
				before := in.calls["primary"].Load()
				if resp, err := in.st.Generate(ctx, req); err != nil || resp.Route != "secondary" || in.calls["primary"].Load() != before {
					t.Errorf("instance %d after learning: Generate = %v, %v, primary calls %d -> %d; want secondary, primary not called",
						i, resp, err, before, in.calls["primary"].Load())
				}
				// A shared breaker's State on this instance says the route is out.
				if st := in.st.Breaker("primary").State(); tc.su.shareBreakers && st != breaker.Open {
					t.Errorf("instance %d after learning: Breaker(primary).State() = %v, want open", i, st)
				}
				if n := in.calls["sibling"]; n != nil && n.Load() != 0 {
					t.Errorf("instance %d: sibling called %d times, want never (primary answered, then both cooled)", i, n.Load())
				}
			}
			t.Logf("staleness over 9 instances with Refresh %v: mean %v, max %v (bound %v); %d calls to the cooling route meanwhile, one a millisecond per instance",
				refresh, sum/9, worst, bound, leaked)
			// The shared set holds the key until the cooldown ends, no
			// longer: less what has passed since the failure, to the
			// millisecond PTTL counts in.
			ttl, err := ins[0].s.c.PTTL(ctx, ins[0].cool.key).Result()
			if passed := time.Since(start); err != nil || ttl < tc.lasts-passed-time.Millisecond || ttl > tc.lasts {
				t.Errorf("PTTL of the cooldown set = %v, %v; want within [%v, %v] (it expires with its cooldown)", ttl, err, tc.lasts-passed-time.Millisecond, tc.lasts)
			}
		})
	}
}

// TestCooldownsScripts pins the shared set: an end is only ever raised; an
// ended cooldown is not read and is removed by the next write; the set
// keeps at most DefaultCooldownKeys members, dropping those that end
// first, and expires with the last.
func TestCooldownsScripts(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{})
	ctx := context.Background()
	key := []string{s.key("cd", "")}
	set := func(pairs ...any) {
		t.Helper()
		args := append(append([]any{fallback.DefaultCooldownKeys}, pairs...), s.opTTL)
		if err := setCooldowns.Run(ctx, s.c, []string{key[0], s.opKey("")}, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	get := func() map[string]int64 {
		t.Helper()
		v, err := getCooldowns.Run(ctx, s.c, key).Slice()
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[string]int64)
		for i := 0; i+1 < len(v); i += 2 {
			m[v[i].(string)] = v[i+1].(int64)
		}
		return m
	}
	// The time left is the time sent less what passed between the write
	// and the read (at most el, measured around both), within the two
	// roundings to the millisecond: [sent - el - 1, sent + 1]. b may end
	// before the read on a starved CPU; it is checked while it cannot.
	start := time.Now()
	set("a", 5000, "b", 40)
	set("a", 2000) // shorter: a keeps 5 s
	got := get()
	el := time.Since(start).Milliseconds()
	if got["a"] < 5000-el-1 || got["a"] > 5001 {
		t.Fatalf("after a 5 s, b 40 ms, a 2 s, %d ms later: a has %d ms left, want within [%d, 5001]", el, got["a"], 5000-el-1)
	}
	if b, ok := got["b"]; (ok && (b < 40-el-1 || b > 41)) || (!ok && el < 39) || len(got) > 2 {
		t.Fatalf("after a 5 s, b 40 ms, a 2 s, %d ms later: %v; want b within [%d, 41] (gone only once 39 ms passed)", el, got, 40-el-1)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	for range tick.C { // wait for b's end
		if _, ok := get()["b"]; !ok {
			break
		}
	}
	tick.Stop()
	if n, err := s.c.ZCard(ctx, key[0]).Result(); err != nil || n != 2 {
		t.Errorf("members before the next write = %d, %v; want 2 (b ended, not yet removed)", n, err)
	}
	set("c", 1000)
	if m, err := s.c.ZRange(ctx, key[0], 0, -1).Result(); err != nil || !slices.Equal(m, []string{"c", "a"}) {
		t.Errorf("members after writing c = %v, %v; want [c a] (b removed)", m, err)
	}
	if ttl, err := s.c.PTTL(ctx, key[0]).Result(); err != nil || ttl < 5*time.Second-time.Since(start)-time.Millisecond || ttl > 5*time.Second {
		t.Errorf("PTTL = %v, %v; want a's end: 5 s less what passed since, %v", ttl, err, time.Since(start))
	}
	// Over the bound: the first to end go.
	var pairs []any
	for i := range fallback.DefaultCooldownKeys + 10 {
		pairs = append(pairs, "k"+strconv.Itoa(i), 10_000+i)
	}
	set(pairs...)
	got = get()
	if len(got) != fallback.DefaultCooldownKeys {
		t.Fatalf("members = %d, want %d", len(got), fallback.DefaultCooldownKeys)
	}
	for _, k := range []string{"a", "c", "k0", "k9"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s kept over the bound; the 12 that end first should go", k)
		}
	}
	if _, ok := got["k10"]; !ok {
		t.Error("k10 dropped; want the 12 that end first dropped, no more")
	}
}

// TestCooldownsLocal: Until answers from the local copy without a round
// trip or an allocation; the later of two Sets is the end written (the
// earlier's may be written first, when the goroutine runs between them),
// and a Set of a time already past changes nothing.
//
// The allocations are counted once the goroutine is closed: AllocsPerRun
// reads the process's counter, which a refresh that the scheduler runs
// during the measurement would raise.
func TestCooldownsLocal(t *testing.T) {
	srv := redistest.Start(t)
	c := newStore(t, srv, Config{}).Cooldowns()
	defer c.Close()
	set := time.Now()
	until := set.Add(time.Minute)
	c.Set("a", until.Add(-time.Second))
	c.Set("a", until)
	c.Set("b", time.Now().Add(-time.Second))
	if got := c.Until("a"); !got.Equal(until) || !c.Until("b").IsZero() {
		t.Errorf("Until(a), Until(b) = %v, %v; want %v and none", got, c.Until("b"), until)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(3 * time.Second); ; <-tick.C {
		score, err := c.s.c.ZScore(context.Background(), c.key, "a").Result()
		end := time.UnixMilli(int64(score))
		if err == nil && end.After(until.Add(-time.Second/2)) { // not the earlier Set's
			// Never early; late by at most the write's transit (the
			// script runs between the Set and this reply) and two
			// roundings up to the millisecond: the time left sent and
			// the server's time. On the wall clock, as the end.
			if late, most := end.Sub(until.Round(0)), onWall(set, time.Now())+2*time.Millisecond; late < 0 || late > most {
				t.Errorf("a's end in Redis is %v after the later Set's, want within [0, %v] (the write's transit)", late, most)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's cooldown not in Redis 3 s after Set")
		}
	}
	if n, err := c.s.c.ZCard(context.Background(), c.key).Result(); err != nil || n != 1 {
		t.Errorf("members = %d, %v; want 1 (b's time had passed)", n, err)
	}
	c.Close()
	if a := testing.AllocsPerRun(100, func() { c.Until("unknown") }); a != 0 {
		t.Errorf("Until of an unknown key allocates %v times, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { c.Until("a") }); a != 0 {
		t.Errorf("Until of a cooling key allocates %v times, want 0", a)
	}
}

// TestCooldownsOutage takes the server away (stopped, paused, asleep)
// under two instances: no call waits on Redis; a cooldown one instance
// learns still holds on it, and only on it; every request is reported as
// an EventSharedStore "fallback:fail_open", the outage as a warning; Close
// returns within the timeout; and once the server is back the cooldown set
// during the outage reaches the other instance.
func TestCooldownsOutage(t *testing.T) {
	for _, o := range outages {
		t.Run(o.name, func(t *testing.T) {
			srv := redistest.Start(t)
			h := &logs{}
			cfg := Config{Timeout: DefaultTimeout, Probe: 20 * time.Millisecond, Refresh: 20 * time.Millisecond, Logger: slog.New(h)}
			limited := &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: 5 * time.Second}
			a := newInstance(t, srv, setup{cfg: cfg, routes: twoRoutes, failure: limited, failing: []string{"primary"}})
			b := newInstance(t, srv, setup{cfg: cfg, routes: twoRoutes})
			obs := &events{}
			ctx := portico.ContextWithObserver(context.Background(), obs)
			req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}
			call := func(in *instance, route string, hops ...string) {
				t.Helper()
				start := time.Now()
				resp, err := in.st.Generate(ctx, req)
				if d := time.Since(start); d > 300*time.Millisecond {
					t.Errorf("a call during the outage took %v: it must not wait for Redis", d)
				}
				if err != nil || resp.Route != route || !slices.Equal(reasons(resp), hops) {
					t.Errorf("Generate = %v (hops %v), %v; want %s's answer, hops %v", resp, reasons(resp), err, route, hops)
				}
			}
			call(b, "primary")
			if n := obs.count(portico.EventSharedStore, "fallback:fail_open"); n != 0 {
				t.Errorf("%d fail_open events with the server up, want 0", n)
			}

			end := o.begin(t, srv)
			waitFor(t, "both instances to see the outage", func() bool { return a.cool.Degraded() && b.cool.Degraded() })
			obs.reset()
			setA := time.Now()
			ahead := wallAhead(setA)
			call(a, "secondary", "primary:rate_limited") // a learns the cooldown, locally
			untilA := a.sets.end("primary").Round(0)     // as a's stack set it: a's reads, once the server is back, may raise its copy
			call(a, "secondary", "primary:cooldown")
			call(b, "primary") // b cannot learn it
			if n := obs.count(portico.EventSharedStore, "fallback:fail_open"); n != 3 {
				t.Errorf("fail_open events = %d, want 3 (one per request)", n)
			}
			if !h.has("WARN redisstore: redis unavailable") {
				t.Error("no warning logged for the outage")
			}
			extra := a.s.Cooldowns()
			extra.Set("other", time.Now().Add(time.Minute))
			start := time.Now()
			extra.Close()
			if d := time.Since(start); d > 300*time.Millisecond {
				t.Errorf("Close during the outage took %v, want within the timeout", d)
			}

			end()
			waitFor(t, "b to learn a's cooldown after the outage", func() bool { return !b.cool.Until("primary").IsZero() })
			before := b.calls["primary"].Load()
			call(b, "secondary", "primary:cooldown")
			if b.calls["primary"].Load() != before {
				t.Error("b called the cooling primary after learning its cooldown")
			}
			// The rest of a's 5 s: never earlier than a's end (unless the
			// wall clock was stepped back, by back: see
			// TestCooldownsTenInstances), later by at most the time since
			// a set it (its write waited out the outage).
			u, now := b.cool.Until("primary"), time.Now()
			back := max(0, ahead-wallAhead(setA))
			if late, most := u.Sub(untilA), onWall(setA, now); late < -back || late > most {
				t.Errorf("b's cooldown ends %v after a's, want within [%v, %v]", late, -back, most)
			}
			waitFor(t, "both stores available", func() bool { return !a.cool.Degraded() && !b.cool.Degraded() })
			if !h.has("INFO redisstore: redis available again") {
				t.Error("no record of the recovery logged")
			}
		})
	}
}

// wallAhead returns how far the wall clock has moved ahead of the
// monotonic clock since base: zero unless the wall clock is stepped. It
// takes the largest of a few readings: time.Now reads the wall clock
// first, so a reading preempted between its two clocks is behind.
func wallAhead(base time.Time) time.Duration {
	most := time.Duration(math.MinInt64)
	for range 5 {
		now := time.Now()
		most = max(most, onWall(base, now)-now.Sub(base))
	}
	return most
}

// onWall returns b - a on the wall clock, which the cooldowns' ends and
// the server's TIME are read on.
func onWall(a, b time.Time) time.Duration { return b.Round(0).Sub(a.Round(0)) }

// waitFor polls cond every 5 ms, for 10 s at most: the guard against a
// hang, long enough for a starved CPU, not the bound of a promise.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); !cond(); <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}
