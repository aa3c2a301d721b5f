package throttle_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/throttle"
)

var req = &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}

// fixed returns a Rand that always draws u.
func fixed(u float64) func() float64 { return func() float64 { return u } }

// call makes n calls through m and returns how many were throttled.
func call(t *testing.T, m portico.Model, n int) (throttled int) {
	t.Helper()
	for range n {
		_, err := m.Generate(context.Background(), req)
		if errors.Is(err, throttle.ErrThrottled) {
			throttled++
		}
	}
	return throttled
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  throttle.Config
		name string
	}{
		{throttle.Config{K: 0.5}, "K"},
		{throttle.Config{K: -1}, "K"},
		{throttle.Config{Window: -time.Second}, "Window"},
		{throttle.Config{Window: 31}, "Window"},
		{throttle.Config{MaxRejection: -0.1}, "MaxRejection"},
		{throttle.Config{MaxRejection: 1.5}, "MaxRejection"},
		{throttle.Config{MaxRejection: math.NaN()}, "MaxRejection"},
	} {
		_, err := throttle.New(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "throttle: ") || !strings.Contains(err.Error(), "Config."+c.name) {
			t.Errorf("New(%+v) = %v, want an error starting with \"throttle: \" naming Config.%s", c.cfg, err, c.name)
		}
	}
}

// book is the SRE book's rule whole: no cap, no minimum of requests, local
// rejections counted as requests.
func book(rnd func() float64) throttle.Config {
	return throttle.Config{MaxRejection: 1, MinRequests: -1, Rand: rnd}
}

// A destination that fails every call, under the book's rule: with every
// draw at u, a call is rejected once n/(n+1) > u, n the requests counted,
// rejections included. At u = 0.6 two calls reach the destination; at
// u = 0.99, 100.
func TestRejectsAtTheProbability(t *testing.T) {
	for _, c := range []struct {
		u    float64
		sent int
	}{{0.6, 2}, {0.99, 100}, {0, 1}} {
		synctest.Test(t, func(t *testing.T) {
			fake := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
			th := throttle.MustNew(book(fixed(c.u)))
			m := th.Wrap(fake)
			throttled := call(t, m, 300)
			if fake.Count() != c.sent || throttled != 300-c.sent {
				t.Errorf("u = %v: destination got %d calls, %d throttled, want %d and %d", c.u, fake.Count(), throttled, c.sent, 300-c.sent)
			}
			p, r, a := th.Probability()
			if r != 300 || a != 0 || p != 300.0/301 {
				t.Errorf("u = %v: Probability = %v, %d, %d, want %v, 300, 0", c.u, p, r, a, 300.0/301)
			}
		})
	}
}

// cycle returns a Rand that draws 0, 0.1, ..., 0.9 in turn.
func cycle() func() float64 {
	i := 0
	return func() float64 {
		u := float64(i%10) / 10
		i++
		return u
	}
}

// Under the cap a destination that fails every call keeps getting one call
// in 10 whatever the window holds, and the rejections are not counted: the
// window holds the destination's verdicts only. The first 10 calls all go
// (DefaultMinRequests); of the 290 others, those drawing 0.9 (not below the
// 0.9 cap) go: 29.
func TestMaxRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		th := throttle.MustNew(throttle.Config{Rand: cycle()})
		throttled := call(t, th.Wrap(fake), 300)
		if fake.Count() != 39 || throttled != 261 {
			t.Errorf("destination got %d calls, %d throttled, want 39 and 261", fake.Count(), throttled)
		}
		if p, r, a := th.Probability(); p != 0.9 || r != 39 || a != 0 {
			t.Errorf("Probability = %v, %d, %d, want 0.9, 39, 0 (the cap; rejections not counted)", p, r, a)
		}
	})
}

// Nothing is rejected before the window counts Config.MinRequests requests:
// with every draw at 0, 5 failures reach the destination and the sixth call
// is rejected; with no minimum, the second is.
func TestMinRequests(t *testing.T) {
	for _, c := range []struct {
		min, sent int
	}{{5, 5}, {-1, 1}} {
		synctest.Test(t, func(t *testing.T) {
			fake := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
			th := throttle.MustNew(throttle.Config{MinRequests: c.min, Rand: fixed(0)})
			if n := call(t, th.Wrap(fake), 20); fake.Count() != c.sent || n != 20-c.sent {
				t.Errorf("MinRequests %d: destination got %d calls, %d throttled, want %d and %d", c.min, fake.Count(), n, c.sent, 20-c.sent)
			}
		})
	}
}

// After 100 accepts, the destination gets K*100 + 1 = 201 requests before the
// first local rejection (every draw is 0: any positive probability rejects),
// and the rejection says why.
func TestAcceptsHoldOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := modeltest.NewFakeFunc(func(n int, _ *portico.Request) modeltest.Outcome {
			if n < 100 {
				return modeltest.Answer("ok")
			}
			return modeltest.Fail(modeltest.RateLimitError(0))
		})
		m := throttle.MustNew(throttle.Config{Rand: fixed(0)}).Wrap(fake)
		if n := call(t, m, 201); n != 0 {
			t.Fatalf("%d of the first 201 calls throttled, want 0", n)
		}
		_, err := m.Generate(context.Background(), req)
		var te *throttle.Error
		if !errors.As(err, &te) || !errors.Is(err, throttle.ErrThrottled) || portico.ClassOf(err) != portico.Rejected {
			t.Fatalf("call 202 = %v, want a Rejected error wrapping *throttle.Error", err)
		}
		if *te != (throttle.Error{Requests: 201, Accepts: 100, Probability: 1.0 / 202}) {
			t.Errorf("throttle.Error = %+v, want 201 requests, 100 accepts, probability 1/202", *te)
		}
		want := "portico: rejected by throttle model m: throttle: destination accepted 100 of 201 requests in the window, rejecting with probability 0.005"
		if err.Error() != want {
			t.Errorf("message = %q, want %q", err.Error(), want)
		}
		if fake.Count() != 201 {
			t.Errorf("destination got %d calls, want 201", fake.Count())
		}
	})
}

// Client errors are accepts; the caller's cancellation and deadline and other
// layers' rejections are not counted; route faults are requests not accepted.
func TestWhatCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errs := []error{modeltest.StatusError(400), modeltest.ContextOverflowError(), modeltest.StatusError(503),
			modeltest.TimeoutError(), &portico.Error{Class: portico.Rejected, Reason: "breaker open"},
			context.Canceled, context.DeadlineExceeded, &portico.Error{Class: portico.InvalidResponse}}
		fake := modeltest.NewFakeFunc(func(n int, _ *portico.Request) modeltest.Outcome { return modeltest.Fail(errs[n]) })
		th := throttle.MustNew(throttle.Config{Rand: fixed(1)}) // never rejects
		call(t, th.Wrap(fake), len(errs))
		if _, r, a := th.Probability(); r != 5 || a != 2 {
			t.Errorf("window counts %d requests, %d accepts, want 5 and 2", r, a)
		}
	})
}

// A failure leaves the window Config.Window (and at most one bucket width)
// later, and the destination is no longer throttled.
func TestWindowForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fails := true
		fake := modeltest.NewFakeFunc(func(int, *portico.Request) modeltest.Outcome {
			if fails {
				return modeltest.Fail(modeltest.StatusError(503))
			}
			return modeltest.Answer("ok")
		})
		cfg := book(fixed(0))
		cfg.Window = 32 * time.Second
		th := throttle.MustNew(cfg)
		m := th.Wrap(fake)
		call(t, m, 1)
		if n := call(t, m, 5); n != 5 {
			t.Fatalf("%d of 5 calls after a failure throttled, want 5", n)
		}
		fails = false
		time.Sleep(31 * time.Second) // the failures' bucket is still in the window
		if p, r, a := th.Probability(); p != 6.0/7 || r != 6 || a != 0 {
			t.Fatalf("Probability 31 s later = %v, %d, %d, want 6/7, 6, 0", p, r, a)
		}
		time.Sleep(time.Second) // 32 s: the bucket of t = 0 has left
		if p, r, a := th.Probability(); p != 0 || r != 0 || a != 0 {
			t.Fatalf("Probability 32 s later = %v, %d, %d, want 0, 0, 0", p, r, a)
		}
		if n := call(t, m, 3); n != 0 {
			t.Errorf("%d calls throttled at 32 s, want 0", n)
		}
		if p, r, a := th.Probability(); p != 0 || r != 3 || a != 3 {
			t.Errorf("Probability after them = %v, %d, %d, want 0, 3, 3", p, r, a)
		}
		if fake.Count() != 4 {
			t.Errorf("destination got %d calls, want 4", fake.Count())
		}
	})
}

// In a clean window accepts are counted in batches of 64 stamped when the
// batch fills: 64 calls at t = 0 leave the window two minutes later, while
// the 10 of t = 1 min, not yet stamped, count as current until stamped.
func TestBatchedAccepts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := throttle.MustNew(throttle.Config{})
		m := th.Wrap(modeltest.NewFake())
		call(t, m, 64)
		time.Sleep(time.Minute)
		call(t, m, 10)
		if _, r, a := th.Probability(); r != 74 || a != 74 {
			t.Errorf("window at 1 min = %d, %d, want 74, 74", r, a)
		}
		time.Sleep(time.Minute + 4*time.Second) // past t = 0's bucket
		if _, r, a := th.Probability(); r != 10 || a != 10 {
			t.Errorf("window at 2 min 4 s = %d, %d, want 10, 10", r, a)
		}
	})
}

// The Models a Throttle wraps share its window: one Throttle per
// destination.
func TestSharedWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := throttle.MustNew(book(fixed(0)))
		call(t, th.Wrap(modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))), 1)
		other := modeltest.NewFake()
		if n := call(t, th.Wrap(other), 1); n != 1 || other.Count() != 0 {
			t.Errorf("a second Model of the same Throttle: %d throttled, %d calls, want 1 and 0", n, other.Count())
		}
		if _, err := throttle.MustNew(book(fixed(0))).Wrap(other).Generate(context.Background(), req); err != nil {
			t.Errorf("another Throttle's Model = %v, want an answer (its own window)", err)
		}
	})
}

func TestNilRequestAndResponse(t *testing.T) {
	m := throttle.MustNew(throttle.Config{}).Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, nil
	}))
	if _, err := m.Generate(context.Background(), nil); err != portico.ErrNilRequest {
		t.Errorf("Generate(nil) = %v, want ErrNilRequest", err)
	}
	if resp, err := m.Generate(context.Background(), req); resp != nil || err != portico.ErrNilResponse {
		t.Errorf("Generate over a (nil, nil) Model = %v, %v, want ErrNilResponse", resp, err)
	}
}

// Concurrent callers: every counted call is in the window once.
func TestConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := modeltest.NewFakeFunc(func(n int, _ *portico.Request) modeltest.Outcome {
			if n%3 == 0 {
				return modeltest.Fail(modeltest.StatusError(500))
			}
			return modeltest.Answer("ok")
		})
		th := throttle.MustNew(throttle.Config{Rand: fixed(1)})
		m := th.Wrap(fake)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { call(t, m, 250) })
		}
		wg.Wait()
		if p, r, a := th.Probability(); r != 2000 || a != 2000-667 || p != 0 {
			t.Errorf("Probability after 2000 calls, 667 failed = %v, %d, %d, want 0, 2000, 1333", p, r, a)
		}
	})
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
		return throttle.MustNew(throttle.Config{}).Wrap(base)
	})
}

// A clean window costs no allocation, and neither does a dirty one that lets
// the call through.
func TestAllocs(t *testing.T) {
	resp := &portico.Response{Text: "ok"}
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil })
	m := throttle.MustNew(throttle.Config{}).Wrap(ok)
	if n := testing.AllocsPerRun(1000, func() { m.Generate(context.Background(), req) }); n != 0 {
		t.Errorf("clean window: %v allocations per call, want 0", n)
	}
	fail := &portico.Error{Class: portico.Transient}
	dirty := throttle.MustNew(throttle.Config{Rand: fixed(1)}).Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, fail
	}))
	if n := testing.AllocsPerRun(1000, func() { dirty.Generate(context.Background(), req) }); n != 0 {
		t.Errorf("dirty window, call sent: %v allocations per call, want 0", n)
	}
}
