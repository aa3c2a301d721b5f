package hedge_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// probe reports whether m admits within a millisecond a call reserving
// 100 + out tokens. A refusal changes nothing.
func probe(t *testing.T, m portico.Model, out int) bool {
	t.Helper()
	r := req.Clone()
	r.MaxOutputTokens = out
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err := m.Generate(ctx, r)
	if err != nil && !errors.Is(err, ratelimit.ErrLimited) {
		t.Fatalf("probe(%d): %v", out, err)
	}
	return err == nil
}

// Hedges go through the route's limiter like any call, but take spare
// capacity only: one that would queue for a slot or wait for tokens is
// refused at once, charged nothing, and the first attempt goes on. The
// race's cancellation of a loser in flight settles it as the limiter
// settles any canceled call: the slot is freed at once, and the
// reservation kept (a canceled call may have generated output; an adapter
// that knows the request was not written yet says NotSent, and gets it
// all back). Each call reserves 100 + 100 tokens and the winner uses 60.
func TestLimiterBelow(t *testing.T) {
	answer := func(d time.Duration) modeltest.Outcome {
		return modeltest.Outcome{Response: &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 50, OutputTokens: 10}}, Latency: d}
	}
	for _, c := range []struct {
		name  string
		limit ratelimit.Config
		fits  int // the largest MaxOutputTokens admitted after the race
		calls int // that reached the model in the race
	}{
		// The loser was in flight: 1000 - 60 - 200 = 740 left.
		{"canceled in flight", ratelimit.Config{Limits: ratelimit.Limits{Tokens: 1000, Period: 1000 * time.Hour, MaxInFlight: 2}}, 640, 2},
		// The one slot is the first attempt's: the hedge is shed, not
		// queued, and only the winner is charged: 1000 - 60 = 940 left.
		{"shed at the cap", ratelimit.Config{Limits: ratelimit.Limits{Tokens: 1000, Period: 1000 * time.Hour, MaxInFlight: 1}, Queue: ratelimit.Queue{Size: 1}}, 840, 1},
		// The hedge would wait for tokens (20 a second, 220 at most): it is
		// refused; at 1 s, 220 - 200 + 20 + 140 = 180.
		{"refused a wait for tokens", ratelimit.Config{Limits: ratelimit.Limits{Tokens: 20, TokenBurst: 220, Period: time.Second}, Mode: ratelimit.Wait}, 80, 1},
	} {
		synctest.Test(t, func(t *testing.T) {
			c.limit.Estimator = portico.EstimatorFunc(func(*portico.Request) int { return 100 })
			lim, err := ratelimit.New(c.limit)
			if err != nil {
				t.Fatal(err)
			}
			fake := modeltest.NewFakeFunc(func(n int, r *portico.Request) modeltest.Outcome {
				switch {
				case r.MaxOutputTokens != 100: // a probe
					return answer(0)
				case n == 0:
					return answer(time.Second)
				}
				return answer(10 * time.Second)
			})
			limited := lim.Wrap(fake)
			r := req.Clone()
			r.MaxOutputTokens = 100
			if _, err := hedge.MustNew(hedge.Config{Delay: 100 * time.Millisecond}).Wrap(limited).Generate(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			if n := fake.Count(); n != c.calls {
				t.Errorf("%s: %d calls reached the model in the race, want %d", c.name, n, c.calls)
			}
			if probe(t, limited, c.fits+1) || !probe(t, limited, c.fits) {
				t.Errorf("%s: after the race, the largest call admitted is not 100 + %d tokens", c.name, c.fits)
			}
		})
	}
}
