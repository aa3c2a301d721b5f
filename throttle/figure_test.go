package throttle_test

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/throttle"
)

// outage is what a client sent to a destination that refused every request
// (503) for ten minutes and then healed, one request every interval (10 a
// second in TestFigureOutage) for thirty minutes in all.
type outage struct {
	sentDuring int           // requests that reached the destination during the outage (of 6,000 at 10 a second)
	lostAfter  int           // requests refused locally after it healed
	recovery   time.Duration // from the healing to the last local refusal
}

func simulateOutage(t *testing.T, cfg *throttle.Config, interval time.Duration) outage {
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
		for range 30 * time.Minute / interval {
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
			time.Sleep(interval)
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
// destination receives all 6,000 requests of the outage.
//
// The SRE book's rule whole (K = 2, two minutes, no cap, rejections counted)
// lets 13 through, but after the healing its window is full of refusals and
// the fraction let through only doubles about every 0.43 window: the last
// local refusal comes 10 min 9 s after the healing, 5,451 requests refused
// meanwhile (2 min 8 s and 1,108 with a 30 s window).
//
// The defaults (rejection capped at 0.9, rejections not counted, 10
// requests before any rejection) let 618 through, a tenth, and are back
// within a quarter of the window: the last refusal 24.8 s after the healing,
// 155 refused (4.3 s and 31 with a 30 s window). The promise the test
// keeps: back within half a window.
func TestFigureOutage(t *testing.T) {
	bookRule := func(w time.Duration) *throttle.Config {
		return &throttle.Config{Window: w, MaxRejection: 1, MinRequests: -1}
	}
	for _, c := range []struct {
		name string
		cfg  *throttle.Config
		want outage
	}{
		{"no throttle", nil, outage{6000, 0, 0}},
		{"book, 2 min", bookRule(0), outage{13, 5451, 609400 * time.Millisecond}},
		{"book, 30 s", bookRule(30 * time.Second), outage{29, 1108, 128200 * time.Millisecond}},
		{"capped, 2 min", &throttle.Config{}, outage{618, 155, 24800 * time.Millisecond}},
		{"capped, 30 s", &throttle.Config{Window: 30 * time.Second}, outage{618, 31, 4300 * time.Millisecond}},
	} {
		got := simulateOutage(t, c.cfg, 100*time.Millisecond)
		t.Logf("%-13s sent during the outage %4d of 6000, refused after healing %4d, recovered after %v",
			c.name, got.sentDuring, got.lostAfter, got.recovery)
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
		if c.cfg != nil && c.cfg.MaxRejection == 0 {
			if w := cmp.Or(c.cfg.Window, throttle.DefaultWindow); got.recovery > w/2 {
				t.Errorf("%s: recovered after %v, want within half the window, %v", c.name, got.recovery, w/2)
			}
		}
	}
}

// TestRecoveryRates: under the defaults, a client sending one request every
// 5 s, every second, 10 or 100 a second is back within half the window of
// the healing.
func TestRecoveryRates(t *testing.T) {
	for _, interval := range []time.Duration{5 * time.Second, time.Second, 100 * time.Millisecond, 10 * time.Millisecond} {
		got := simulateOutage(t, &throttle.Config{}, interval)
		t.Logf("one request every %-5v refused after healing %4d, recovered after %v", interval, got.lostAfter, got.recovery)
		if got.recovery > throttle.DefaultWindow/2 {
			t.Errorf("one request every %v: recovered after %v, want within %v", interval, got.recovery, throttle.DefaultWindow/2)
		}
	}
}

// TestFigureOverload: what the cap costs. A destination that accepts 1
// request a second and refuses the rest (503), under 10 requests a second:
// the book's rule sends it K times what it accepts, 2.04 a second; the
// defaults, which do not count their rejections, about sqrt(K * 10 * 1),
// 4.50 a second. MaxRejection 1 restores the book's rule.
func TestFigureOverload(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  throttle.Config
		want float64 // requests a second the destination receives
	}{
		{"book", throttle.Config{MaxRejection: 1, MinRequests: -1}, 2.04},
		{"capped", throttle.Config{}, 4.5},
	} {
		synctest.Test(t, func(t *testing.T) {
			slot, accepted := time.Now(), 0
			fake := modeltest.NewFakeFunc(func(int, *portico.Request) modeltest.Outcome {
				if time.Since(slot) >= time.Second {
					slot, accepted = slot.Add(time.Second), 0
				}
				if accepted < 1 {
					accepted++
					return modeltest.Answer("ok")
				}
				return modeltest.Fail(modeltest.StatusError(503))
			})
			c.cfg.Rand = rand.New(rand.NewPCG(1, 2)).Float64
			m := throttle.MustNew(c.cfg).Wrap(fake)
			warm := 0
			for i := range 18000 { // 30 minutes; the last 20 measured
				if i == 6000 {
					warm = fake.Count()
				}
				m.Generate(context.Background(), req)
				time.Sleep(100 * time.Millisecond)
			}
			got := math.Round(float64(fake.Count()-warm)/1200*100) / 100
			t.Logf("%-6s the destination receives %.2f requests a second", c.name, got)
			if got != c.want {
				t.Errorf("%s: %v requests a second, want %v", c.name, got, c.want)
			}
		})
	}
}
