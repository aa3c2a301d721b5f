package redisstore

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// span is an event known only to lie between two readings of the client's
// clock: an admission (by the server, between the call's start and the
// model's call) or a refund (between the model's return and the call's).
type span struct {
	from, to time.Time
	tokens   float64
}

// worst returns the largest excess of net admitted tokens over b + r*dt
// over every interval [S, E] that starts at an admission's from and ends
// at one's to (see worstCharged, with no surcharges).
func worst(adm, ref []span, b, r float64) float64 { return worstCharged(adm, nil, ref, b, r) }

// worstCharged returns the largest excess of net admitted tokens over
// b + r*dt over every interval [S, E] that starts at an admission's from
// and ends at one's to. Only admissions that lie wholly inside [S, E] are
// counted, with the surcharges (sur) that lie inside and end before one
// of those admissions began, and every refund that may lie inside is
// subtracted, so the net counted is at most the net admitted in [S, E] by
// the server's clock, whatever the order within each span: a correct
// limiter never exceeds 0. A surcharge counts only when the server applied
// it before an admission counted: the bound (ratelimit's The bound with
// refunds) sums the events up to the interval's last admission, whose
// level is >= 0; a surcharge after it takes the level below 0, by up to
// the surcharge, which no admission can prevent (the call already used
// the tokens) and which delays the next admissions instead.
func worstCharged(adm, sur, ref []span, b, r float64) float64 {
	slices.SortFunc(adm, func(x, y span) int { return x.to.Compare(y.to) })
	slices.SortFunc(sur, func(x, y span) int { return x.to.Compare(y.to) })
	slices.SortFunc(ref, func(x, y span) int { return x.from.Compare(y.from) })
	excess := -b
	for _, s := range adm {
		S := s.from
		net, j, k := 0.0, 0, 0
		var last time.Time      // the latest from of an admission counted
		for _, e := range adm { // by increasing end: E = e.to
			for j < len(ref) && !ref[j].from.After(e.to) {
				if !ref[j].to.Before(S) {
					net -= ref[j].tokens
				}
				j++
			}
			if e.from.Before(S) {
				continue
			}
			net += e.tokens
			if e.from.After(last) {
				last = e.from
			}
			for k < len(sur) && !sur[k].to.After(last) {
				if !sur[k].from.Before(S) {
					net += sur[k].tokens
				}
				k++
			}
			excess = max(excess, net-b-r*e.to.Sub(S).Seconds())
		}
	}
	return excess
}

// TestBucketBoundTenInstances: ten Limiters, each with its own Store and
// client over one Redis, call as fast as they can for 150 ms with random
// costs and random refunds; over every interval the net tokens admitted
// stay within b + r*dt. Without the Store (the control), each Limiter
// drains its own full bucket, with no refunds, so ten of them admit about
// ten bursts at once, and the same check fails by more than b: it can. The
// control runs until every instance has drained its burst, not for a fixed
// time, so a slow machine cannot make it pass by calling less.
func TestBucketBoundTenInstances(t *testing.T) {
	srv := redistest.Start(t)
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 13))
		b := 100 + rng.IntN(300)         // burst, tokens
		perSec := 500 + rng.IntN(1500)   // refill, tokens per second
		maxCost := 4 + rng.IntN(b/8)     // N_in + N_max at most
		mode := ratelimit.Mode(seed % 2) // Reject, Wait
		for _, shared := range []bool{true, false} {
			name := "seed" + strconv.FormatUint(seed, 10) + "/" + map[bool]string{true: "shared", false: "local"}[shared]
			t.Run(name, func(t *testing.T) {
				var store func(prefix string) ratelimit.Store
				if shared {
					store = func(prefix string) ratelimit.Store { return newStore(t, srv, Config{Prefix: prefix}).Buckets() }
				}
				adm, ref := run10(t, store, mode, seed, b, perSec, maxCost, 150*time.Millisecond)
				ex := worst(adm, ref, float64(b), float64(perSec))
				t.Logf("b=%d r=%d/s maxCost=%d mode=%v: %d admissions, %d refunds, worst excess %.3f tokens",
					b, perSec, maxCost, mode, len(adm), len(ref), ex)
				if shared && ex > 1e-3 {
					t.Errorf("net admitted exceeds b + r*dt by %.3f tokens", ex)
				}
				if !shared && ex < float64(b) {
					t.Errorf("ten local buckets exceed b + r*dt by only %.3f tokens: the check would not catch a limit that is not shared", ex)
				}
			})
		}
	}
}

// run10 runs the ten instances for d, each on its own store(prefix) (nil:
// no store, the control), and returns their admissions and refunds.
func run10(t *testing.T, store func(prefix string) ratelimit.Store, mode ratelimit.Mode, seed uint64, b, perSec, maxCost int,
	d time.Duration) (adm, ref []span) {
	var mu sync.Mutex
	shared := store != nil
	prefix := "bound" + strconv.FormatUint(seed, 10) + ":"
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	hardStop := time.Now().Add(5 * time.Second) // the control's drain, on a very slow machine
	for i := range 10 {
		cfg := ratelimit.Config{Limits: ratelimit.Limits{Tokens: perSec * 60, TokenBurst: b}, Mode: mode,
			MaxWait: 20 * time.Millisecond, Estimator: portico.EstimatorFunc(func(*portico.Request) int { return 1 })}
		if shared {
			cfg.Shared.Store = store(prefix)
		}
		lim, err := ratelimit.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			var called, returned time.Time
			m := lim.Wrap(portico.ModelFunc(func(_ context.Context, req *portico.Request) (*portico.Response, error) {
				called = time.Now()
				reserve := 1 + req.MaxOutputTokens
				used := reserve // the control refunds nothing
				if shared {
					used = 1 + rng.IntN(reserve)
				}
				returned = time.Now()
				return &portico.Response{Usage: portico.Usage{InputTokens: 1, OutputTokens: used - 1}}, nil
			}))
			admitted := 0 // tokens this instance reserved
			for time.Now().Before(deadline) || (!shared && admitted < b && time.Now().Before(hardStop)) {
				maxOut := rng.IntN(maxCost)
				req := &portico.Request{Model: "m", MaxOutputTokens: max(maxOut, 1)}
				start := time.Now()
				resp, err := m.Generate(context.Background(), req)
				end := time.Now()
				if err != nil {
					continue
				}
				reserve := 1 + req.MaxOutputTokens
				used := resp.Usage.InputTokens + resp.Usage.OutputTokens
				admitted += reserve
				mu.Lock()
				adm = append(adm, span{start, called, float64(reserve)})
				if used < reserve {
					ref = append(ref, span{returned, end, float64(reserve - used)})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return adm, ref
}

// TestWorstChargedSurcharges: worstCharged counts a surcharge only before
// an admission it counts. b = 10 tokens, r = 1 token per ms. A correct
// bucket admits 10 at 0.05 ms (from 0, its call returned at 1 ms) and
// then applies a surcharge of 5 at 0.2 ms (queued at 0.15, replied at
// 0.3): the level goes to -4.8, which no limiter prevents; counting that
// surcharge, as an admission, would make the check fail by 4 tokens over
// [0, 1 ms] (10 + 5 > 10 + 1). A bucket that ignored the surcharge and
// admitted 1 more at 1 ms (from 0.9, to 1.1) is still caught: the
// surcharge came before that admission began, 16 > 10 + 1.1.
func TestWorstChargedSurcharges(t *testing.T) {
	at := func(ms float64) time.Time { return time.Unix(0, 0).Add(time.Duration(ms * float64(time.Millisecond))) }
	sur := []span{{at(0.15), at(0.3), 5}}
	correct := []span{{at(0), at(1), 10}}
	if got := worstCharged(correct, sur, nil, 10, 1000); math.Abs(got-(-1)) > 1e-9 {
		t.Errorf("correct bucket: worst excess %.3f tokens, want -1", got)
	}
	if got := worst(append(slices.Clone(correct), sur...), nil, 10, 1000); math.Abs(got-4) > 1e-9 {
		t.Errorf("the surcharge counted as an admission: worst excess %.3f tokens, want 4", got)
	}
	loose := []span{{at(0), at(0.1), 10}, {at(0.9), at(1.1), 1}}
	if got := worstCharged(loose, sur, nil, 10, 1000); math.Abs(got-4.9) > 1e-9 {
		t.Errorf("bucket ignoring the surcharge: worst excess %.3f tokens, want 4.9", got)
	}
}
