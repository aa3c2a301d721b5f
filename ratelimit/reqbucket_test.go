package ratelimit

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"golang.org/x/time/rate"
)

// reqCase is a request bucket's setting for the differential tests: rate in
// events per second and burst.
type reqCase struct {
	r     float64
	burst int
}

var reqCases = []reqCase{
	{1, 1}, {10, 1}, {10, 5}, {600.0 / 60, 100}, {1e3, 50}, {1e6, 1000}, {0.3, 3}, {7.0 / 3, 4},
}

// reqSteps returns a random sequence of non-decreasing times (t0 onwards)
// and costs in [1, burst]. The gaps mix zero, exponential ones and exact
// multiples of the time one token takes, one nanosecond short or long, so
// the level lands on and next to the edge that rate's rounding decides.
func reqSteps(rng *rand.Rand, c reqCase, n int) ([]time.Time, []int) {
	per := time.Duration(float64(time.Second) / c.r) // time for one token
	ts := make([]time.Time, n)
	ks := make([]int, n)
	now := t0
	for i := range n {
		switch rng.IntN(4) {
		case 0: // same instant
		case 1:
			now = now.Add(time.Duration(rng.ExpFloat64() * float64(per)))
		default:
			now = now.Add(max(0, time.Duration(rng.IntN(3))*per+time.Duration(rng.IntN(3)-1)))
		}
		ts[i] = now
		ks[i] = 1
		if rng.IntN(4) == 0 {
			ks[i] = 1 + rng.IntN(c.burst)
		}
	}
	return ts, ks
}

// TestRequestBucketMatchesRate is the differential test that pins the
// request bucket's semantics: for random sequences of (time, n) with
// non-decreasing times, bucket.take admits exactly what rate.Limiter.AllowN
// admits under the same rate and burst, and its level equals rate's
// TokensAt to the bit after every step. (With a time earlier than the last
// admission rate.Limiter moves its clock back and credits the refill twice;
// the bucket treats such a time as the last one, which TestBucketSteps pins.)
//
// The same sequences under a rule without rate's rounding (admit when
// level >= n) must disagree somewhere, so the comparison has teeth.
func TestRequestBucketMatchesRate(t *testing.T) {
	naiveDiffers := 0
	for ci, c := range reqCases {
		for seed := range uint64(4) {
			rng := rand.New(rand.NewPCG(seed, uint64(ci)))
			ts, ks := reqSteps(rng, c, 5000)
			ref := rate.NewLimiter(rate.Limit(c.r), c.burst)
			ref.AllowN(t0, 0) // start the reference's clock at t0, full
			b := newBucket(c.r, float64(c.burst), 0)
			naive := newBucket(c.r, float64(c.burst), 0)
			admitted := 0
			for i, now := range ts {
				n := ks[i]
				want := ref.AllowN(now, n)
				got, wait := b.take(now.Sub(t0), float64(n), 0)
				if got != want {
					t.Fatalf("r=%v burst=%d seed %d step %d: take(%v, %d) = %v, rate.AllowN = %v", c.r, c.burst, seed, i, now.Sub(t0), n, got, want)
				}
				if !got && wait <= 0 {
					t.Fatalf("r=%v burst=%d step %d: refused with wait %v", c.r, c.burst, i, wait)
				}
				if lv, _ := b.at(now.Sub(t0)); lv != ref.TokensAt(now) {
					t.Fatalf("r=%v burst=%d seed %d step %d: level %v, rate.TokensAt %v", c.r, c.burst, seed, i, lv, ref.TokensAt(now))
				}
				if got {
					admitted++
				}
				lv, last := naive.at(now.Sub(t0))
				nok := lv >= float64(n)
				if nok {
					naive.set(lv-float64(n), last)
				}
				if nok != want {
					naiveDiffers++
				}
			}
			if admitted == 0 || admitted == len(ts) {
				t.Errorf("r=%v burst=%d seed %d: admitted %d of %d: the sequence does not exercise refusals", c.r, c.burst, seed, admitted, len(ts))
			}
		}
	}
	if naiveDiffers == 0 {
		t.Errorf("a rule without rate's rounding agreed with rate.AllowN everywhere: the sequences never reach the edge")
	}
}

// TestLimiterRequestsMatchRate drives a Limiter with only a request bucket
// and a rate.Limiter of the same rate and burst with the same random arrival
// times (virtual time): the Limiter admits exactly the calls rate.AllowN
// admits, and its RetryAfter on a refusal is rate's delay for the call
// (rounded up to the nanosecond where rate truncates).
func TestLimiterRequestsMatchRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const perMin, burst = 600, 5 // 10 per second
		l := mustNew(t, Config{Limits: Limits{Requests: perMin, RequestBurst: burst}})
		m := l.Wrap(okModel(1, 1))
		ref := rate.NewLimiter(rate.Limit(perMin/60.0), burst)
		rng := rand.New(rand.NewPCG(1, 2))
		r := req("a", 1)
		ctx := context.Background()
		admitted := 0
		for i := range 3000 {
			time.Sleep(time.Duration(rng.ExpFloat64() * float64(80*time.Millisecond)))
			now := time.Now()
			_, err := m.Generate(ctx, r)
			want := ref.AllowN(now, 1)
			if (err == nil) != want {
				t.Fatalf("call %d at %v: err = %v, rate.AllowN = %v", i, now, err, want)
			}
			if err != nil {
				// rate's own delay for the call, truncated to the nanosecond
				// as rate does; RetryAfter rounds up instead.
				ra := portico.RetryAfterOf(err)
				exact := time.Duration((1 - ref.TokensAt(now)) / (perMin / 60.0) * float64(time.Second))
				if ra < exact || ra > exact+1 {
					t.Fatalf("call %d: RetryAfter %v, want rate's delay %v rounded up to the nanosecond", i, ra, exact)
				}
			} else {
				admitted++
			}
		}
		if admitted < 1000 || admitted > 2900 {
			t.Errorf("admitted %d of 3000 at 12.5 arrivals/s against 10/s: the run does not exercise both outcomes", admitted)
		}
	})
}

// take admits cost n at now when the level covers n plus ahead (see fits),
// as admit does, and returns true; else it changes nothing and returns false
// with the wait waitFor gives. n must be <= burst.
func (b *bucket) take(now time.Duration, n, ahead float64) (bool, time.Duration) {
	level, last := b.at(now)
	if b.fits(level, n+ahead, last) {
		b.set(level-n, last)
		return true, 0
	}
	return false, b.waitFor(n+ahead-level, last)
}
