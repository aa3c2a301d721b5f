package ratelimit

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is ms milliseconds on a bucket's clock (a Duration since an origin).
func at(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// ev is an event at bucket time now, placed on the wall clock at t0 + now.
func ev(now time.Duration, d float64) event { return event{t0.Add(now), d} }

func TestBucketSteps(t *testing.T) {
	// b = 100 tokens, r = 10 tokens/s.
	b := newBucket(10, 100, at(0))
	// level is the bucket's level at ms, after the step: a refused take
	// changes nothing, and the level at a later time includes the refill.
	steps := []struct {
		name     string
		ms       int
		do       func() (bool, time.Duration)
		wantOK   bool
		wantWait time.Duration
		level    float64
	}{
		{"take 60 at 0", 0, func() (bool, time.Duration) { return b.take(at(0), 60, 0) }, true, 0, 40},
		{"take 50 at 0 refused", 0, func() (bool, time.Duration) { return b.take(at(0), 50, 0) }, false, time.Second, 40},
		{"take 50 at 1s", 1000, func() (bool, time.Duration) { return b.take(at(1000), 50, 0) }, true, 0, 0},
		{"refund 30", 1000, func() (bool, time.Duration) { b.refund(30); return true, 0 }, true, 0, 30},
		{"refund 500 capped at b", 1000, func() (bool, time.Duration) { b.refund(500); return true, 0 }, true, 0, 100},
		{"take 100 at 1s", 1000, func() (bool, time.Duration) { return b.take(at(1000), 100, 0) }, true, 0, 0},
		{"charge 20", 1000, func() (bool, time.Duration) { b.charge(20, 600); return true, 0 }, true, 0, -20},
		{"take 10 at 1s waits 3s", 1000, func() (bool, time.Duration) { return b.take(at(1000), 10, 0) }, false, 3 * time.Second, -20},
		{"time before last changes nothing", 1000, func() (bool, time.Duration) { return b.take(at(500), 10, 0) }, false, 3 * time.Second, -20},
		{"take 10 at 4s behind 20 held waits 2s", 4000, func() (bool, time.Duration) { return b.take(at(4000), 10, 20) }, false, 2 * time.Second, 10},
		{"take 10 at 4s", 4000, func() (bool, time.Duration) { return b.take(at(4000), 10, 0) }, true, 0, 0},
	}
	for _, s := range steps {
		ok, wait := s.do()
		level, _ := b.at(at(s.ms))
		if ok != s.wantOK || wait != s.wantWait || math.Abs(level-s.level) > 1e-9 {
			t.Fatalf("%s: (ok, wait, level) = (%v, %v, %v), want (%v, %v, %v)", s.name, ok, wait, level, s.wantOK, s.wantWait, s.level)
		}
	}
	if b.full(at(4000)) {
		t.Errorf("full(4s) = true at level %v, want false", b.level)
	}
	if !b.full(at(14000)) {
		t.Errorf("full(14s) = false at level %v, want true", b.level)
	}
	// A charge stops at -floor, and never raises a level already below it
	// (a floor lowered by SetLimit).
	b = newBucket(10, 100, at(0))
	if b.charge(1e18, 600); b.level != -600 {
		t.Errorf("charge(1e18, floor 600) from 100: level %v, want -600", b.level)
	}
	if b.charge(10, 300); b.level != -600 {
		t.Errorf("charge(10, floor 300) from -600: level %v, want -600 (not raised)", b.level)
	}
}

func TestBucketAdopt(t *testing.T) {
	// Configured: b = 1000, r = 100/s. Provider: 200 remain, limit 1000,
	// reset in 8s: its refill is 100/s as well, so only the level drops.
	b := newBucket(100, 1000, at(0))
	b.adopt(at(0), 200, 1000, 8*time.Second, time.Minute)
	if b.level != 200 || b.provUntil != noView {
		t.Fatalf("adopt(200, 1000, 8s): level %v provUntil %v, want 200 and none", b.level, b.provUntil)
	}
	// Provider: 0 remain of 1000, reset in 20s: 50/s, tighter than 100/s.
	b.adopt(at(0), 0, 1000, 20*time.Second, time.Minute)
	if ok, wait := b.take(at(0), 500, 0); ok || wait != 10*time.Second {
		t.Fatalf("take(500) under provider view = (%v, %v), want (false, 10s)", ok, wait)
	}
	// 1500 needs 20s at 50/s (1000 tokens) then 500 at 100/s: 25s, but b = 1000.
	if ok, wait := b.take(at(0), 1000, 0); ok || wait != 20*time.Second {
		t.Fatalf("take(1000) under provider view = (%v, %v), want (false, 20s)", ok, wait)
	}
	// After the reset the configured rate applies again: at 22s the level is
	// 20s*50 + 2s*100 = 1200, capped at 1000.
	if ok, _ := b.take(at(22000), 1000, 0); !ok {
		t.Fatalf("take(1000) at 22s refused, level %v", b.level)
	}
	// A looser provider view changes nothing.
	b.adopt(at(22000), 5000, 10000, time.Second, time.Minute)
	if b.level != 0 || b.provUntil != noView {
		t.Fatalf("looser view: level %v provUntil %v, want 0 and none", b.level, b.provUntil)
	}
	// A provider with nothing used (remaining = limit, or more) gives no
	// rate: (limit-remaining)/reset would be 0 and stall the refill.
	b = newBucket(100, 1000, at(0))
	b.take(at(0), 1000, 0)
	b.adopt(at(0), 1000, 1000, 20*time.Second, time.Minute)
	b.adopt(at(0), 1200, 1000, 20*time.Second, time.Minute)
	if ok, wait := b.take(at(0), 500, 0); ok || wait != 5*time.Second || b.provUntil != noView {
		t.Fatalf("take(500) after a view of nothing used = (%v, %v), provUntil %v; want (false, 5s), none", ok, wait, b.provUntil)
	}
	// A hold shorter than the reset: 0 remain of 1000, reset in 20s (50/s),
	// held 4s. 500 tokens: 4s at 50/s give 200, 300 more take 3s at 100/s.
	b = newBucket(100, 1000, at(0))
	b.adopt(at(0), 0, 1000, 20*time.Second, 4*time.Second)
	if ok, wait := b.take(at(0), 500, 0); ok || wait != 7*time.Second {
		t.Fatalf("take(500) under a view held 4s = (%v, %v), want (false, 7s)", ok, wait)
	}
	if b.provUntil != at(4000) || b.rateAt(at(3999)) != 50 || b.rateAt(at(4000)) != 100 {
		t.Fatalf("view held 4s: provUntil %v, rates %v, %v; want 4s, 50, 100", b.provUntil, b.rateAt(at(3999)), b.rateAt(at(4000)))
	}
}

// event is a change of the bucket as the bound counts it: +cost at an
// admission, -refund at a refund.
type event struct {
	t time.Time
	d float64
}

// maxExcess returns max over all intervals [t_i, t_j] of
// (net admitted cost in it) - (b + r*dt).
func maxExcess(evs []event, b, r float64) float64 {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t.Before(evs[j].t) })
	worst := math.Inf(-1)
	for i := range evs {
		net := 0.0
		for j := i; j < len(evs); j++ {
			net += evs[j].d
			if ex := net - (b + r*evs[j].t.Sub(evs[i].t).Seconds()); ex > worst {
				worst = ex
			}
		}
	}
	return worst
}

// runRandom drives a bucket with random arrivals, costs, refunds, surcharges
// and provider adjustments, and returns the admission and refund events.
// naiveRefund replaces the capped refund by an uncapped one, the bug the
// bound's proof rules out.
func runRandom(seed uint64, naiveRefund bool) (evs []event, b, r float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	b, r = 1000, 100
	bk := newBucket(r, b, 0)
	var now time.Duration
	type open struct{ cost float64 }
	var pending []open
	surplus := 0.0 // naiveRefund: refunds kept outside the cap
	for range 1000 {
		now += time.Duration(rng.ExpFloat64() * float64(200*time.Millisecond))
		switch x := rng.Float64(); {
		case x < 0.55:
			cost := 1 + rng.Float64()*(b-1)*math.Pow(rng.Float64(), 3)
			bk.advance(now)
			if naiveRefund && bk.level+surplus >= cost {
				use := min(surplus, cost)
				surplus -= use
				bk.level -= cost - use
				evs = append(evs, ev(now, cost))
				pending = append(pending, open{cost})
			} else if ok, _ := bk.take(now, cost, 0); ok {
				evs = append(evs, ev(now, cost))
				pending = append(pending, open{cost})
			}
		case x < 0.9 && len(pending) > 0:
			i := rng.IntN(len(pending))
			ρ := pending[i].cost * rng.Float64()
			pending = append(pending[:i], pending[i+1:]...)
			bk.advance(now)
			if naiveRefund {
				surplus += ρ
			} else {
				bk.refund(ρ)
			}
			evs = append(evs, ev(now, -ρ))
		case x < 0.95:
			bk.advance(now)
			bk.charge(rng.Float64()*50, r*60)
		default:
			bk.adopt(now, rng.IntN(int(b)), int(b), time.Duration(rng.IntN(20))*time.Second, time.Duration(1+rng.IntN(20))*time.Second)
		}
	}
	return evs, b, r
}

// TestBucketBound is the property test of seed 000: for random arrivals,
// costs and refunds, the net admitted cost over every interval dt is at most
// b + r*dt. The tolerance 1e-6 covers float64 rounding of sums of ~1e3
// terms of ~1e3. The same harness with an uncapped refund must find a
// violation, so the check has teeth.
func TestBucketBound(t *testing.T) {
	for seed := range uint64(8) {
		evs, b, r := runRandom(seed, false)
		if ex := maxExcess(evs, b, r); ex > 1e-6 {
			t.Errorf("seed %d: max over intervals of net - (b + r*dt) = %v, want <= 0", seed, ex)
		}
	}
	violated := 0
	for seed := range uint64(8) {
		evs, b, r := runRandom(seed, true)
		if maxExcess(evs, b, r) > 1e-6 {
			violated++
		}
	}
	if violated == 0 {
		t.Errorf("uncapped refunds never broke the bound in 8 runs: the property test cannot fail")
	}
}

// TestFixedWindowContrast shows seed 000's contrast: a fixed window of N per
// W admits 2N within a moment across a boundary, while a token bucket with
// b = N and r = N/W admits at most N + r*dt in any interval dt.
func TestFixedWindowContrast(t *testing.T) {
	const n = 100
	w := time.Minute
	// A greedy client sends one unit every 10ms from 59s to 61s, around the
	// boundary at 60s; the bucket is full at 59s, as the fixed window is.
	var fixedEv, bucketEv []event
	count, window := 0, -1
	bk := newBucket(float64(n)/w.Seconds(), n, 0)
	for ms := 59000; ms < 61000; ms += 10 {
		now := at(ms)
		if win := ms / 60000; win != window {
			window, count = win, 0
		}
		if count < n {
			count++
			fixedEv = append(fixedEv, ev(now, 1))
		}
		if ok, _ := bk.take(now, 1, 0); ok {
			bucketEv = append(bucketEv, ev(now, 1))
		}
	}
	maxIn := func(evs []event, dt time.Duration) int {
		best := 0
		for i := range evs {
			k := 0
			for j := i; j < len(evs) && evs[j].t.Sub(evs[i].t) <= dt; j++ {
				k++
			}
			best = max(best, k)
		}
		return best
	}
	dt := 2 * time.Second
	if got := maxIn(fixedEv, dt); got != 2*n {
		t.Errorf("fixed window: most admitted in %v = %d, want %d (twice the limit)", dt, got, 2*n)
	}
	bound := n + int(float64(n)/w.Seconds()*dt.Seconds())
	if got := maxIn(bucketEv, dt); got > bound || got < n {
		t.Errorf("token bucket: most admitted in %v = %d, want in [%d, %d] (b + r*dt)", dt, got, n, bound)
	}
}

// FuzzBucketBound drives the bucket with fuzzed operations (take, refund,
// charge, provider adjustment, limit change down) at fuzzed times and checks
// the b + r*dt bound on net admitted cost over every interval, and that no
// operation panics or yields a NaN level.
func FuzzBucketBound(f *testing.F) {
	f.Add([]byte{0, 10, 200, 1, 5, 90, 0, 0, 255, 2, 1, 1, 0, 3, 250})
	f.Add([]byte{0, 0, 255, 0, 0, 255, 1, 0, 255, 0, 0, 255, 4, 1, 128})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const r = 100.0
		b := 1000.0
		bk := newBucket(r, b, 0)
		var now time.Duration
		var evs []event
		var open []float64
		for i := 0; i+2 < len(ops) && i < 3*400; i += 3 {
			op, dt, x := ops[i]%5, ops[i+1], float64(ops[i+2])
			now += time.Duration(dt) * 10 * time.Millisecond
			switch op {
			case 0:
				cost := x * 4 // up to 1020: some exceed b and are refused
				if cost <= bk.burst {
					if ok, wait := bk.take(now, cost, 0); ok {
						evs = append(evs, ev(now, cost))
						open = append(open, cost)
					} else if wait <= 0 {
						t.Fatalf("take(%v) refused with wait %v at level %v", cost, wait, bk.level)
					}
				}
			case 1:
				if len(open) > 0 {
					ρ := open[0] * x / 255
					open = open[1:]
					bk.advance(now)
					bk.refund(ρ)
					evs = append(evs, ev(now, -ρ))
				}
			case 2:
				bk.advance(now)
				bk.charge(x, r*60)
			case 3:
				bk.adopt(now, int(x)*4, 1000, time.Duration(x)*50*time.Millisecond, time.Duration(256-x)*50*time.Millisecond)
			case 4:
				if nb := 500 + x*2; nb < b { // only lower: the bound is stated for one b
					b = nb
					bk.setLimit(now, r, b)
				}
			}
			if math.IsNaN(bk.level) || bk.level > bk.burst+1e-9 {
				t.Fatalf("level %v with burst %v", bk.level, bk.burst)
			}
		}
		if ex := maxExcess(evs, 1000, r); ex > 1e-6 {
			t.Fatalf("net admitted cost exceeds b + r*dt by %v", ex)
		}
	})
}
