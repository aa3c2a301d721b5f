package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// wantRejected checks that err is the breaker's refusal with the given RetryAfter.
func wantRejected(t *testing.T, err error, retryAfter time.Duration) {
	t.Helper()
	var pe *portico.Error
	if !errors.Is(err, ErrOpen) || !errors.Is(err, portico.ErrRejected) || !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a Rejected *portico.Error wrapping ErrOpen", err)
	}
	if pe.RetryAfter != retryAfter {
		t.Fatalf("RetryAfter = %v, want %v", pe.RetryAfter, retryAfter)
	}
}

func TestConsecutiveFailuresTripAndOpenRejectsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustNew(Config{Name: "r1", OnStateChange: rec.hook})
		f := &scripted{err: fail(portico.Transient)}
		m := b.Wrap(f)
		for i := range 4 {
			call(t, m)
			if s := b.State(); s != Closed {
				t.Fatalf("after %d failures State() = %v, want closed", i+1, s)
			}
		}
		call(t, m)
		if s := b.State(); s != Open {
			t.Fatalf("after 5 failures State() = %v, want open", s)
		}
		start := time.Now()
		err := call(t, m)
		wantRejected(t, err, 30*time.Second)
		if f.n() != 5 {
			t.Errorf("model calls = %d, want 5 (open breaker must not call it)", f.n())
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("rejection took %v, want 0 (no waiting)", d)
		}
		if b.Available() {
			t.Errorf("Available() = true while open, want false")
		}
		var pe *portico.Error
		errors.As(err, &pe)
		if pe.Model != "r1" {
			t.Errorf("Error.Model = %q, want r1", pe.Model)
		}
		time.Sleep(10 * time.Second)
		wantRejected(t, call(t, m), 20*time.Second)
		if got, want := rec.path(), []string{"closed>open:consecutive failures"}; !equal(got, want) {
			t.Errorf("transitions = %v, want %v", got, want)
		}
		if rec.trs[0].OpenFor != 30*time.Second || rec.trs[0].Class != portico.Transient || rec.trs[0].Generation != 1 {
			t.Errorf("transition = %+v, want OpenFor 30s, Class transient, Generation 1", rec.trs[0])
		}
	})
}

func TestIgnoredClassesNeverCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: AnyOf(ConsecutiveFailures(3), FailureRate(0.01, 1)), Window: Window{Calls: 10}})
		f := &scripted{}
		m := b.Wrap(f)
		for _, c := range []portico.Class{portico.Permanent, portico.Incompatible, portico.Canceled, portico.Deadline, portico.Rejected} {
			f.set(fail(c))
			for range 50 {
				call(t, m)
			}
			if s := b.State(); s != Closed {
				t.Fatalf("after 50 %v errors State() = %v, want closed", c, s)
			}
		}
		// A bare context error is classified too, and ignored.
		f.set(context.Canceled)
		for range 50 {
			call(t, m)
		}
		if s := b.State(); s != Closed {
			t.Fatalf("after 50 context.Canceled State() = %v, want closed", s)
		}
		// A layer's cut of a short share of the caller's deadline: Ambiguous
		// or Transient, and ignored.
		for _, c := range []portico.Class{portico.Ambiguous, portico.Transient} {
			f.set(&portico.Error{Class: c, Err: portico.Join(context.DeadlineExceeded, portico.ErrDeadlineCut)})
			for range 50 {
				call(t, m)
			}
			if s := b.State(); s != Closed {
				t.Fatalf("after 50 %v deadline cuts State() = %v, want closed", c, s)
			}
		}
		if got := b.count.Sum(); got[0] != 0 {
			t.Errorf("window holds %d calls, want 0: ignored errors are neither success nor failure", got[0])
		}
	})
}

// A deadline cut marks only a timeout: an error of another route-fault class
// that happens to wrap it still counts.
func TestDeadlineCutOnlyForTimeouts(t *testing.T) {
	b := MustNew(Config{Trip: ConsecutiveFailures(3)})
	m := b.Wrap(&scripted{err: &portico.Error{Class: portico.InvalidResponse, Err: portico.ErrDeadlineCut}})
	for range 3 {
		call(t, m)
	}
	if s := b.State(); s != Open {
		t.Errorf("after 3 InvalidResponse errors wrapping ErrDeadlineCut State() = %v, want open", s)
	}
}

// An answer an acceptance check refused (portico.ErrAnswerRefused, which
// validate's Rejection matches) is InvalidResponse, and ignored: what one
// request asked of its answer says nothing of the route's health.
func TestRefusedAnswersIgnored(t *testing.T) {
	b := MustNew(Config{Trip: ConsecutiveFailures(3)})
	m := b.Wrap(&scripted{err: &portico.Error{Class: portico.InvalidResponse, Err: fmt.Errorf("schema: %w", portico.ErrAnswerRefused)}})
	for range 10 {
		call(t, m)
	}
	if s := b.State(); s != Closed {
		t.Errorf("after 10 refused answers State() = %v, want closed", s)
	}
	if got := b.count.Sum(); got[0] != 0 {
		t.Errorf("window holds %d calls, want 0: a refused answer is neither success nor failure", got[0])
	}
}

func TestRouteFaultClassesCount(t *testing.T) {
	for _, c := range []portico.Class{portico.Transient, portico.RateLimited, portico.Ambiguous, portico.InvalidResponse} {
		t.Run(c.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := MustNew(Config{Trip: ConsecutiveFailures(2)})
				m := b.Wrap(&scripted{err: fail(c)})
				call(t, m)
				call(t, m)
				if s := b.State(); s != Open {
					t.Fatalf("after 2 %v errors State() = %v, want open", c, s)
				}
			})
		})
	}
}

func TestSuccessResetsConsecutive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: ConsecutiveFailures(3)})
		f := &scripted{queue: []error{fail(portico.Transient), fail(portico.Transient), nil, fail(portico.Transient), fail(portico.Transient), fail(portico.Permanent), fail(portico.Transient)}}
		m := b.Wrap(f)
		for i := range 6 {
			call(t, m)
			if s := b.State(); s != Closed {
				t.Fatalf("call %d: State() = %v, want closed", i+1, s)
			}
		}
		call(t, m) // third transient in a row: the permanent one between is ignored
		if s := b.State(); s != Open {
			t.Fatalf("State() = %v, want open", s)
		}
	})
}

func TestFailureRateCountWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustNew(Config{Window: Window{Calls: 4}, Trip: FailureRate(0.75, 4), OnStateChange: rec.hook})
		T := fail(portico.Transient)
		f := &scripted{queue: []error{T, T, nil, nil, nil, nil, T, T, T}}
		m := b.Wrap(f)
		for i := range 8 { // window at the end: S S F F = 50%
			call(t, m)
			if s := b.State(); s != Closed {
				t.Fatalf("call %d: State() = %v, want closed", i+1, s)
			}
		}
		call(t, m) // window S F F F = 75%
		if got, want := rec.path(), []string{"closed>open:failure rate"}; !equal(got, want) {
			t.Errorf("transitions = %v, want %v", got, want)
		}
	})
}

func TestMinCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: FailureRate(0.5, 10)})
		m := b.Wrap(&scripted{err: fail(portico.Transient)})
		for range 9 {
			call(t, m)
		}
		if s := b.State(); s != Closed {
			t.Fatalf("after 9 failures State() = %v, want closed (minCalls 10)", s)
		}
		call(t, m)
		if s := b.State(); s != Open {
			t.Fatalf("after 10 failures State() = %v, want open", s)
		}
	})
}

func TestFailureRateTimeWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Window: Window{Duration: 10 * time.Second}, Trip: FailureRate(0.5, 3)})
		f := &scripted{}
		m := b.Wrap(f)
		T := fail(portico.Transient)
		f.queue = []error{T, nil, nil}
		for range 3 {
			call(t, m) // 1 of 3 failed
		}
		time.Sleep(11 * time.Second) // all three leave the window
		f.queue = []error{T, T, T}
		call(t, m)
		call(t, m)
		if s := b.State(); s != Closed {
			t.Fatalf("State() = %v, want closed: 2 calls in window < MinCalls (old calls not expired?)", s)
		}
		call(t, m)
		if s := b.State(); s != Open {
			t.Fatalf("State() = %v, want open: 3 of 3 failed in window", s)
		}
	})
}

func TestTimeWindowSlidesByBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Window: Window{Duration: 10 * time.Second}, Trip: FailureRate(0.5, 4)})
		f := &scripted{}
		m := b.Wrap(f)
		T := fail(portico.Transient)
		f.queue = []error{T} // t=0
		call(t, m)
		time.Sleep(5 * time.Second)
		f.queue = []error{nil, nil} // t=5
		call(t, m)
		call(t, m)
		time.Sleep(4 * time.Second) // t=9: the failure at t=0 is still in
		f.queue = []error{T}
		call(t, m) // 2 of 4 failed
		if s := b.State(); s != Open {
			t.Fatalf("State() = %v, want open: window at t=9s holds F S S F", s)
		}
	})
}

func TestSlowCallRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustNew(Config{SlowCall: time.Second, Trip: SlowCallRate(0.5, 4), OnStateChange: rec.hook})
		f := &scripted{}
		m := b.Wrap(f)
		call(t, m)
		call(t, m)
		f.delay = time.Second
		call(t, m)
		if s := b.State(); s != Closed {
			t.Fatalf("State() = %v after 1 slow of 3, want closed", s)
		}
		call(t, m) // 2 slow of 4 = 50%
		if got, want := rec.path(), []string{"closed>open:slow call rate"}; !equal(got, want) {
			t.Fatalf("transitions = %v, want %v", got, want)
		}
		// In half-open, a slow probe reopens the breaker.
		time.Sleep(30 * time.Second)
		call(t, m)
		if got, want := rec.path()[1:], []string{"open>half_open:open interval elapsed", "half_open>open:probe slow"}; !equal(got, want) {
			t.Fatalf("transitions = %v, want %v", got, want)
		}
	})
}

func TestHalfOpenCloseAndReopen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second, OnStateChange: rec.hook})
		f := &scripted{err: fail(portico.Transient)}
		m := b.Wrap(f)
		call(t, m)
		wantRejected(t, call(t, m), time.Second)
		time.Sleep(time.Second)
		if !b.Available() {
			t.Fatalf("Available() = false when the probe is due, want true")
		}
		call(t, m) // probe fails: open for OpenFor again
		wantRejected(t, call(t, m), time.Second)
		time.Sleep(time.Second)
		f.set(nil)
		if err := call(t, m); err != nil {
			t.Fatalf("probe = %v, want success", err)
		}
		if s := b.State(); s != Closed {
			t.Fatalf("State() = %v after a successful probe, want closed", s)
		}
		f.set(fail(portico.Transient))
		call(t, m) // trips again
		wantRejected(t, call(t, m), time.Second)
		want := []string{
			"closed>open:consecutive failures",
			"open>half_open:open interval elapsed", "half_open>open:probe failed",
			"open>half_open:open interval elapsed", "half_open>closed:probes succeeded",
			"closed>open:consecutive failures",
		}
		if got := rec.path(); !equal(got, want) {
			t.Errorf("transitions =\n%v, want\n%v", got, want)
		}
		for i, tr := range rec.trs {
			if tr.Generation != uint64(i+1) {
				t.Errorf("transition %d Generation = %d, want %d", i, tr.Generation, i+1)
			}
		}
	})
}

// The half-open breaker closes after Probes successful probes, not before.
func TestHalfOpenNeedsProbesSuccesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second, Probes: 3})
		f := &scripted{err: fail(portico.Transient)}
		m := b.Wrap(f)
		call(t, m)
		time.Sleep(time.Second)
		f.set(nil)
		for i := range 2 {
			call(t, m)
			if s := b.State(); s != HalfOpen {
				t.Fatalf("after %d successful probes State() = %v, want half_open", i+1, s)
			}
		}
		call(t, m)
		if s := b.State(); s != Closed {
			t.Fatalf("after 3 successful probes State() = %v, want closed", s)
		}
	})
}

func TestHalfOpenRejectsBeyondProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second})
		release := make(chan struct{})
		var entered atomic.Int32
		fails := true
		m := b.Wrap(portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			if fails {
				return nil, fail(portico.Transient)
			}
			entered.Add(1)
			<-release
			return okResp, nil
		}))
		call(t, m)
		fails = false
		time.Sleep(time.Second)
		done := make(chan error)
		go func() { done <- call(t, m) }()
		synctest.Wait() // the probe is blocked in the model
		if b.Available() {
			t.Errorf("Available() = true with the only probe slot busy, want false")
		}
		wantRejected(t, call(t, m), 0)
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("probe = %v, want success", err)
		}
		if n := entered.Load(); n != 1 {
			t.Errorf("model entered %d times, want 1", n)
		}
		if s := b.State(); s != Closed {
			t.Errorf("State() = %v, want closed", s)
		}
	})
}

func TestIgnoredProbeFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second})
		f := &scripted{err: fail(portico.Transient)}
		m := b.Wrap(f)
		call(t, m)
		time.Sleep(time.Second)
		f.set(fail(portico.Permanent))
		call(t, m)
		if s := b.State(); s != HalfOpen {
			t.Fatalf("State() = %v after a permanent error on a probe, want half_open", s)
		}
		f.set(nil)
		if err := call(t, m); err != nil {
			t.Fatalf("second probe = %v, want success (slot freed)", err)
		}
		if s := b.State(); s != Closed {
			t.Fatalf("State() = %v, want closed", s)
		}
	})
}

func TestPanicCountsAndPropagates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second})
		m := b.Wrap(portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			panic("boom")
		}))
		mustPanic := func() {
			t.Helper()
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recover() = %v, want boom", r)
				}
			}()
			call(t, m)
		}
		mustPanic()
		if s := b.State(); s != Open {
			t.Fatalf("State() after a panic = %v, want open", s)
		}
		time.Sleep(time.Second)
		mustPanic() // a panicking probe: reopens and frees its slot
		if s := b.State(); s != Open {
			t.Fatalf("State() after a panicking probe = %v, want open", s)
		}
		if n := b.probes.Load(); n != 0 {
			t.Errorf("probes in flight = %d, want 0", n)
		}
	})
}

func TestHookMayReadStateAndCallBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *Breaker
		var seen []State
		var avail []bool
		b = MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second, OnStateChange: func(tr Transition) {
			seen = append(seen, b.State())
			avail = append(avail, b.Available())
		}})
		f := &scripted{err: fail(portico.Transient)}
		m := b.Wrap(f)
		call(t, m)
		time.Sleep(time.Second)
		f.set(nil)
		call(t, m)
		want := []State{Open, HalfOpen, Closed}
		if len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
			t.Errorf("State() inside hook = %v, want %v", seen, want)
		}
		// In half-open, the probe slot is already taken when the hook runs.
		if wantA := []bool{false, false, true}; len(avail) != 3 || avail[0] != wantA[0] || avail[1] != wantA[1] || avail[2] != wantA[2] {
			t.Errorf("Available() inside hook = %v, want %v", avail, wantA)
		}
	})
}

type events struct {
	mu sync.Mutex
	ev []portico.Event
}

func (e *events) Observe(ctx context.Context, ev portico.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
}

func TestObserveBreakerState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &events{}
		ctx := portico.ContextWithObserver(context.Background(), obs)
		b := MustNew(Config{Name: "r1", Trip: ConsecutiveFailures(1), OpenFor: time.Second})
		f := &scripted{err: fail(portico.RateLimited)}
		m := b.Wrap(f)
		m.Generate(ctx, &portico.Request{})
		time.Sleep(time.Second)
		f.set(nil)
		m.Generate(ctx, &portico.Request{})
		want := []portico.Event{
			{Kind: portico.EventBreakerState, Route: "r1", Class: portico.RateLimited, Delay: time.Second, Reason: "open"},
			{Kind: portico.EventBreakerState, Route: "r1", Reason: "half_open"},
			{Kind: portico.EventBreakerState, Route: "r1", Reason: "closed"},
		}
		if len(obs.ev) != len(want) {
			t.Fatalf("events = %+v, want %+v", obs.ev, want)
		}
		for i := range want {
			if obs.ev[i] != want[i] {
				t.Errorf("event %d = %+v, want %+v", i, obs.ev[i], want[i])
			}
		}
	})
}

// TestProbeLimitUnderLoad hammers a breaker that never closes (every probe
// fails, reopening it, while probes of earlier half-open periods may still
// hold their slots) from 300 goroutines: every call that reaches the model is
// a probe, and the model counts how many run at once.
func TestProbeLimitUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const probes = 3
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: 5 * time.Millisecond, Probes: probes})
		var inflight, peak, calls atomic.Int32
		m := b.Wrap(portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			n := inflight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			c := calls.Add(1)
			time.Sleep(time.Duration(c%3+1) * time.Millisecond)
			inflight.Add(-1)
			return nil, fail(portico.Transient)
		}))
		call(t, m) // trips
		var wg sync.WaitGroup
		var rejected atomic.Int32
		for g := range 300 {
			wg.Go(func() {
				for i := range 40 {
					if err := call(t, m); errors.Is(err, ErrOpen) {
						rejected.Add(1)
					}
					time.Sleep(time.Duration((g+i)%7+1) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		if p := peak.Load(); p != probes {
			t.Errorf("peak concurrent probes = %d, want exactly %d (never more, and the limit reached)", p, probes)
		}
		if c := calls.Load(); c < 10 {
			t.Errorf("model calls = %d, want many probes", c)
		}
		if r := rejected.Load(); r == 0 {
			t.Errorf("rejections = 0, want some")
		}
		if n := b.probes.Load(); n != 0 {
			t.Errorf("probes in flight at the end = %d, want 0", n)
		}
	})
}

// TestConcurrentClosedCalls runs the lock-free closed path from many goroutines
// and checks that the window counted every call.
func TestConcurrentClosedCalls(t *testing.T) {
	b := MustNew(Config{Window: Window{Calls: 1000}})
	m := b.Wrap(portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return okResp, nil
	}))
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			for range 5 {
				call(t, m)
			}
		})
	}
	wg.Wait()
	if got := b.count.Sum(); got[0] != 1000 || got[1] != 0 {
		t.Errorf("tally = %+v, want 1000 calls, 0 failed", got)
	}
}

func TestClosedPathAllocs(t *testing.T) {
	base := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return okResp, nil
	})
	ctx := context.Background()
	req := &portico.Request{}
	for name, cfg := range map[string]Config{
		"count":      {},
		"time":       {Window: Window{Duration: time.Minute}},
		"count+slow": {SlowCall: time.Second},
	} {
		m := MustNew(cfg).Wrap(base)
		if n := testing.AllocsPerRun(1000, func() { m.Generate(ctx, req) }); n != 0 {
			t.Errorf("%s: allocs per closed call = %v, want 0", name, n)
		}
	}
}

// TestHugeOpenFor: an open interval near the largest Duration does not
// overflow the open deadline (which would reopen at once).
func TestHugeOpenFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := New(Config{Trip: ConsecutiveFailures(1), OpenFor: math.MaxInt64 - 1})
		if err != nil {
			t.Fatalf("New(OpenFor: MaxInt64-1) = %v, want nil", err)
		}
		m := b.Wrap(&scripted{err: fail(portico.Transient)})
		time.Sleep(time.Second) // the breaker's clock is past 0 when it trips
		call(t, m)
		time.Sleep(time.Hour)
		if err := call(t, m); !errors.Is(err, ErrOpen) {
			t.Fatalf("call an hour later = %v, want ErrOpen", err)
		}
		if b.Available() {
			t.Errorf("Available() = true, want false")
		}
	})
}

// TestStragglerFromEarlierClosedPeriodIgnored: a call that started before the
// breaker tripped and succeeds after it closed again says nothing about the
// new closed period: it must neither count as one of its successes nor, in a
// time-based window, wipe the bucket the new period is filling.
func TestStragglerFromEarlierClosedPeriodIgnored(t *testing.T) {
	for name, cfg := range map[string]Config{
		"count": {Window: Window{Calls: 10}},
		"time":  {Window: Window{Duration: 10 * time.Second}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg.Trip, cfg.OpenFor = FailureRate(1, 2), time.Second
				rec := &recorder{}
				cfg.OnStateChange = rec.hook
				b := MustNew(cfg)
				release := make(chan struct{})
				var outcome error
				m := b.Wrap(portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
					if req.Model == "straggler" {
						<-release
						return okResp, nil
					}
					if outcome != nil {
						return nil, outcome
					}
					return okResp, nil
				}))
				done := make(chan error)
				go func() {
					_, err := m.Generate(context.Background(), &portico.Request{Model: "straggler"})
					done <- err
				}()
				synctest.Wait() // the straggler is in flight in closed period 0
				outcome = fail(portico.Transient)
				call(t, m)
				call(t, m) // 2 of 2 failed: open
				time.Sleep(time.Second)
				outcome = nil
				call(t, m) // probe: closed again
				outcome = fail(portico.Transient)
				call(t, m) // 1 of 1 failed, below minCalls
				close(release)
				if err := <-done; err != nil {
					t.Fatalf("straggler = %v, want success", err)
				}
				call(t, m) // 2 of 2 failed in the new period: open
				want := []string{"closed>open:failure rate", "open>half_open:open interval elapsed", "half_open>closed:probes succeeded", "closed>open:failure rate"}
				if got := rec.path(); !equal(got, want) {
					t.Errorf("transitions = %v, want %v", got, want)
				}
			})
		})
	}
}
