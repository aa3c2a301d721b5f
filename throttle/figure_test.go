package throttle_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/throttle"
)

// outage is what a client sent to a destination that refused every request
// (503) for ten minutes and then healed, at 10 requests per second for
// thirty minutes in all.
type outage struct {
	sentDuring int           // requests that reached the destination during the outage (of 6,000)
	lostAfter  int           // requests refused locally after it healed
	recovery   time.Duration // from the healing to the last local refusal
}

func simulateOutage(t *testing.T, cfg *throttle.Config) outage {
	var got outage
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		heal := start.Add(10 * time.Minute)
		fake := modeltest.NewFakeFunc(func(int, *portico.Request) modeltest.Outcome {
			if time.Now().Before(heal) {
				return modeltest.Fail(modeltest.StatusError(503))
			}
			return modeltest.Answer("ok")
		})
		var m portico.Model = fake
		if cfg != nil {
			c := *cfg
			c.Rand = rand.New(rand.NewPCG(1, 2)).Float64 // one caller at a time
			m = throttle.MustNew(c).Wrap(fake)
		}
		var last time.Time
		for range 18000 {
			before := fake.Count()
			_, err := m.Generate(context.Background(), req)
			now := time.Now()
			switch {
			case now.Before(heal):
				got.sentDuring += fake.Count() - before
			case errors.Is(err, throttle.ErrThrottled):
				got.lostAfter++
				last = now
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !last.IsZero() {
			got.recovery = last.Sub(heal)
		}
	})
	return got
}

// TestFigureOutage: requests sent to a destination that rejects everything,
// with and without client-side throttling, and how long the throttle takes
// to let everything through once the destination heals. Without it the
// destination receives all 6,000 requests of the outage; with the SRE
// book's throttle (K = 2, two minutes) it receives 13. The price is the
// recovery: after the healing the window is full of refusals, and the
// fraction let through only doubles about every 0.43 window (see the
// package documentation), so the last local refusal comes 10 min 9 s after
// the healing, 5,451 requests refused meanwhile. A
// 30 s window lets 29 through during the outage and recovers in 2 min 8 s.
func TestFigureOutage(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  *throttle.Config
		want outage
	}{
		{"no throttle", nil, outage{6000, 0, 0}},
		{"K=2, 2 min", &throttle.Config{}, outage{13, 5451, 609400 * time.Millisecond}},
		{"K=2, 30 s", &throttle.Config{Window: 30 * time.Second}, outage{29, 1108, 128200 * time.Millisecond}},
	} {
		got := simulateOutage(t, c.cfg)
		t.Logf("%-12s sent during the outage %4d of 6000, refused after healing %4d, recovered after %v",
			c.name, got.sentDuring, got.lostAfter, got.recovery)
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
