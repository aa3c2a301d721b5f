package ratelimit

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// The fail-open rule (internal/failopen): each instance's local share is
// kept while the store answers, charged for what the store admits for it
// and lowered when the store refuses it, and decides alone, as it stands,
// from the first call of an outage.

// TestSharedFailOpenKeepsTheSharedBound: four instances that spent the
// shared burst of 8 between them (2 each, their shares) admit nothing more
// in the instant the store fails: the shares were charged for what the
// store admitted. (A share that starts full at each outage would admit 8
// more, b + b in one instant.)
func TestSharedFailOpenKeepsTheSharedBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		lim := Limits{Requests: 8} // per minute; burst 8
		var ls []*Limiter
		for range 4 {
			ls = append(ls, mustNew(t, Config{Limits: lim, Estimator: fixedEstimator(1),
				Shared: Shared{Store: f, FailOpen: true, Instances: 4}}))
		}
		admitted := 0
		try := func(l *Limiter) {
			if _, err := l.Wrap(okModel(1, 1)).Generate(t.Context(), req("tenant", 1)); err == nil {
				admitted++
			}
		}
		for i := range 16 { // the store admits 8 of these, 2 per instance
			try(ls[i%4])
		}
		if admitted != 8 {
			t.Fatalf("store up: admitted %d of 16, want the burst of 8", admitted)
		}
		f.setDown(true) // the same instant: nothing has refilled
		for i := range 16 {
			try(ls[i%4])
		}
		if admitted > 8 {
			t.Errorf("admitted %d in one instant across 4 fail-open instances, want at most the shared burst of 8", admitted)
		}
	})
}

// TestSharedFailOpenAdmitsFromTheFirstCall: a tenant under its limit is
// admitted from the first call of an outage, on what it had not used of
// its share; the share is neither emptied nor filled as an outage begins
// or ends, so a store that flaps hands out nothing more.
func TestSharedFailOpenAdmitsFromTheFirstCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		l := mustNew(t, Config{Limits: Limits{Requests: 8}, Estimator: fixedEstimator(1),
			Shared: Shared{Store: f, FailOpen: true, Instances: 4}})
		m := l.Wrap(okModel(1, 1))
		call := func() error { _, err := m.Generate(t.Context(), req("tenant", 1)); return err }
		if err := call(); err != nil { // the store admits it; the share of 2 keeps 1
			t.Fatal(err)
		}
		f.setDown(true)
		if err := call(); err != nil {
			t.Fatalf("first call of the outage = %v, want admitted by the share's last request", err)
		}
		if err := call(); err == nil {
			t.Fatal("second call of the outage admitted, want refused: the share of 2 is spent")
		}
		f.setDown(false)
		f.setDown(true) // a flap: the share is as it was
		if err := call(); err == nil {
			t.Fatal("first call of a second outage, at once, admitted: want refused, a flap refills nothing")
		}
		time.Sleep(30 * time.Second) // a quarter of 8 a minute: one request in 30 s
		if err := call(); err != nil {
			t.Errorf("30 s into the second outage: %v, want admitted", err)
		}
	})
}

// TestSharedFailOpenRefusalLowersTheShare: instance a spends the shared
// burst; the store refuses b's call, which tells b the bucket is empty, so
// b's share admits nothing when the store fails at once; c, which saw no
// refusal, admits its share (what the package doc counts in the allowance).
func TestSharedFailOpenRefusalLowersTheShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		newL := func() portico.Model {
			return mustNew(t, Config{Limits: Limits{Requests: 8}, Estimator: fixedEstimator(1),
				Shared: Shared{Store: f, FailOpen: true, Instances: 4}}).Wrap(okModel(1, 1))
		}
		a, b, c := newL(), newL(), newL()
		call := func(m portico.Model) error { _, err := m.Generate(t.Context(), req("tenant", 1)); return err }
		for range 8 {
			if err := call(a); err != nil {
				t.Fatal(err)
			}
		}
		if err := call(b); !errors.Is(err, ErrLimited) {
			t.Fatalf("b's call with the shared burst spent = %v, want ErrLimited", err)
		}
		f.setDown(true)
		if err := call(b); err == nil {
			t.Error("b's first call of the outage admitted, want refused: the store's refusal emptied b's share")
		}
		if err := call(a); err == nil {
			t.Error("a's first call of the outage admitted, want refused: a spent more than its share")
		}
		for i := range 3 {
			if err := call(c); (err == nil) != (i < 2) {
				t.Errorf("c's call %d of the outage = %v, want admitted: %v (its share of 2, unused)", i, err, i < 2)
			}
		}
	})
}

// fleetRun is one run of N fail-open Limiters over one fake store whose
// outages are given, each instance calling on a schedule; ref, a Limiter
// in memory with the same limits, is given every call too: what the shared
// limit would admit.
type fleetRun struct {
	admitted []time.Duration // the fleet's admissions, in time order
	refIn    int             // ref's admissions from the first outage's start to the last's end
	fleetIn  int             // the fleet's
}

type span struct{ from, to time.Duration }

// fleet runs n instances for d with the store down during outs; every
// instance i calls at the times next(i, rng) gives, until d.
func fleet(t *testing.T, lim Limits, n int, d time.Duration, outs []span, seed uint64, next func(i int, at time.Duration, rng *rand.Rand) time.Duration) fleetRun {
	f := newFakeStore()
	ref := mustNew(t, Config{Limits: lim, Estimator: fixedEstimator(1)}).Wrap(okModel(1, 1))
	start := time.Now()
	var mu sync.Mutex
	var run fleetRun
	in := func(at time.Duration) bool { return at >= outs[0].from && at < outs[len(outs)-1].to }
	go func() {
		for _, o := range outs {
			time.Sleep(o.from - time.Since(start))
			f.setDown(true)
			time.Sleep(o.to - time.Since(start))
			f.setDown(false)
		}
	}()
	var wg sync.WaitGroup
	for i := range n {
		m := mustNew(t, Config{Limits: lim, Estimator: fixedEstimator(1),
			Shared: Shared{Store: f, FailOpen: true, Instances: n}}).Wrap(okModel(1, 1))
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() {
			for at := next(i, 0, rng); at < d; at = next(i, at, rng) {
				time.Sleep(at - time.Since(start)) // never at an outage's edge: see every
				mu.Lock()
				now := time.Since(start)
				_, rerr := ref.Generate(t.Context(), req("tenant", 1))
				if rerr == nil && in(now) {
					run.refIn++
				}
				mu.Unlock()
				if _, err := m.Generate(t.Context(), req("tenant", 1)); err == nil {
					mu.Lock()
					run.admitted = append(run.admitted, now)
					if in(now) {
						run.fleetIn++
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(run.admitted)
	return run
}

// worstExcess returns the largest excess, over every window between two
// admissions, of what was admitted beyond b + r·dt + r·d, d the outage
// time within the window: what the package doc's allowance leaves to the
// shares' level at an outage's start.
func worstExcess(adm []time.Duration, b, r float64, outs []span) (excess, overB float64) {
	excess, overB = math.Inf(-1), math.Inf(-1)
	for i := range adm {
		for j := i; j < len(adm); j++ {
			dt := (adm[j] - adm[i]).Seconds()
			down := 0.0
			for _, o := range outs {
				down += max(0, (min(o.to, adm[j]) - max(o.from, adm[i])).Seconds())
			}
			got := float64(j - i + 1)
			excess = max(excess, got-(b+r*dt+r*down))
			overB = max(overB, got-(b+r*dt))
		}
	}
	return excess, overB
}

// every returns a schedule of one call per period on average, uniform
// within ±jitter, at an odd nanosecond so that no call falls on an
// outage's edge (whole milliseconds).
func every(period, jitter time.Duration) func(int, time.Duration, *rand.Rand) time.Duration {
	return func(_ int, at time.Duration, rng *rand.Rand) time.Duration {
		d := period - jitter + time.Duration(rng.Int64N(int64(2*jitter)+1))
		return (at+max(d, time.Millisecond))/time.Millisecond*time.Millisecond + 1
	}
}

// TestFailOpenFleet: three instances sharing 60 requests a minute (burst
// 60) through a store that fails for 10 s: from the first call of the
// outage they admit at least 80% of what the shared limit alone would
// have admitted of the same calls (over the flaps' minute when the store
// flaps), and over every window at most b + r·dt plus the package doc's
// allowance: r·d for the outage's time d within the window, at most
// b·(N-1)/N for what the shares held beyond the store as it began, and
// N-1 requests for the shares' lead. Loads: twice the limit, half of it,
// one instance taking all of it before the outage while the others, which
// saw no refusal, call from its first instant (the allowance's worst
// case), and a store that fails 200 ms of every second for a minute.
func TestFailOpenFleet(t *testing.T) {
	lim := Limits{Requests: 60}
	const n, b, r = 3, 60.0, 1.0
	outage := []span{{60 * time.Second, 70 * time.Second}}
	var flaps []span
	for s := 30 * time.Second; s < 90*time.Second; s += time.Second {
		flaps = append(flaps, span{s, s + 200*time.Millisecond})
	}
	hog := func(i int, at time.Duration, rng *rand.Rand) time.Duration {
		if i == 0 || at >= 60*time.Second {
			return every(300*time.Millisecond, 200*time.Millisecond)(i, at, rng)
		}
		return 60*time.Second + time.Duration(rng.Int64N(int64(100*time.Millisecond)))/time.Millisecond*time.Millisecond + 1
	}
	for _, tc := range []struct {
		name  string
		outs  []span
		next  func(int, time.Duration, *rand.Rand) time.Duration
		ratio float64 // admitted in the outages / the shared limit's, at least
	}{
		{"twice the limit", outage, every(1500*time.Millisecond, time.Second), 0.8},
		{"half the limit", outage, every(6*time.Second, 4*time.Second), 0.8},
		{"one instance took it all", outage, hog, 0.8},
		{"flapping", flaps, every(1500*time.Millisecond, time.Second), 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(20) {
				synctest.Test(t, func(t *testing.T) {
					run := fleet(t, lim, n, 100*time.Second, tc.outs, seed, tc.next)
					if got := float64(run.fleetIn) / float64(run.refIn); got < tc.ratio {
						t.Errorf("seed %d: admitted %d in the outage, the shared limit %d: %.2f, want >= %.2f", seed, run.fleetIn, run.refIn, got, tc.ratio)
					}
					ex, overB := worstExcess(run.admitted, b, r, tc.outs)
					if allowance := b*(n-1)/n + (n - 1); ex > allowance {
						t.Errorf("seed %d: a window admitted %.2f beyond b + r·dt + r·d, want at most b·(N-1)/N + (N-1)·1 = %.0f", seed, ex, allowance)
					}
					if testing.Verbose() {
						t.Logf("seed %d: outage %d/%d admitted (%.0f%%), worst excess over b + r·dt %.2f, beyond b + r·dt + r·d %.2f", seed, run.fleetIn, run.refIn, 100*float64(run.fleetIn)/float64(run.refIn), overB, ex)
					}
				})
			}
		})
	}
}
