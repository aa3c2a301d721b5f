package ratelimit

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

func TestShed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 2}})
		m := l.Wrap(slowModel(time.Second, 1))
		rec := &recorder{}
		ctx := portico.ContextWithObserver(t.Context(), rec)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { m.Generate(ctx, req("a", 1)) })
		}
		synctest.Wait()
		_, err := m.Generate(ctx, req("a", 1))
		var pe *portico.Error
		if !errors.Is(err, ErrOverloaded) || !errors.As(err, &pe) || pe.Class != portico.Rejected || pe.Reason != "overloaded" {
			t.Fatalf("third call with 2 in flight = %v, want Rejected overloaded", err)
		}
		if _, err := m.Generate(ctx, req("b", 1)); err != nil {
			t.Errorf("another key's call = %v, want admitted", err)
		}
		wg.Wait()
		if k := rec.kinds(); len(k) != 1 || k[0] != portico.EventRateLimitReject {
			t.Errorf("events = %v, want one rate_limit_reject", k)
		}
		if _, err := m.Generate(ctx, req("a", 1)); err != nil {
			t.Errorf("after the two finished = %v, want admitted", err)
		}
	})
}

// littleThroughput runs clients in a closed loop against a model of fixed
// latency w behind an in-flight cap of lmax, shed calls retrying after 1ms,
// and returns the calls completed per second over 10s of virtual time.
func littleThroughput(t *testing.T, w time.Duration) float64 {
	var done atomic.Int64
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 4}})
		m := l.Wrap(slowModel(w, 1))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				for ctx.Err() == nil {
					if _, err := m.Generate(ctx, req("a", 1)); err == nil {
						done.Add(1)
					} else {
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
	})
	return float64(done.Load()) / 10
}

// TestLittlesLaw: admitted throughput is L_max / W; when the model slows from
// W = 100ms to 200ms it halves, with no other change (seed 000).
func TestLittlesLaw(t *testing.T) {
	fast := littleThroughput(t, 100*time.Millisecond)
	slow := littleThroughput(t, 200*time.Millisecond)
	// L_max / W exactly, less the calls cut by the 10s end: 40/s and 20/s.
	if fast < 39.6 || fast > 40 || slow < 19.6 || slow > 20 {
		t.Errorf("throughput at W=100ms, 200ms = %v/s, %v/s; want 40/s and 20/s (L_max/W, within the last round)", fast, slow)
	}
}

// queued starts a call on m in a goroutine that records its name in order
// when admitted.
func queued(ctx context.Context, m portico.Model, r *portico.Request, name string, order *[]string, mu *sync.Mutex, wg *sync.WaitGroup) {
	wg.Go(func() {
		if _, err := m.Generate(ctx, r); err == nil {
			mu.Lock()
			*order = append(*order, name)
			mu.Unlock()
		}
	})
}

func sess(s string) *portico.Request {
	r := req("a", 1)
	r.Identity.SessionID = s
	return r
}

// TestQueueOrders: with one slot busy, calls queue and are served by the
// order: FCFS per call, FCFS per program, least attained service.
func TestQueueOrders(t *testing.T) {
	for _, tt := range []struct {
		order Order
		want  string
	}{
		{FCFSCall, "x2 y1 x3"},
		{FCFSProgram, "x2 x3 y1"},
		{PLAS, "y1 x2 x3"},
	} {
		t.Run(tt.order.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 8, Order: tt.order, PLAS: PLASConfig{Quantum: time.Second}}})
				m := l.Wrap(slowModel(time.Second, 1))
				// Program x runs a first call of 3s: its attained service is 3s.
				l.Wrap(slowModel(3*time.Second, 1)).Generate(t.Context(), sess("x"))
				var mu sync.Mutex
				var order []string
				var wg sync.WaitGroup
				wg.Go(func() { m.Generate(t.Context(), sess("z")) }) // holds the slot for 1s
				synctest.Wait()
				queued(t.Context(), m, sess("x"), "x2", &order, &mu, &wg)
				synctest.Wait()
				queued(t.Context(), m, sess("y"), "y1", &order, &mu, &wg)
				synctest.Wait()
				queued(t.Context(), m, sess("x"), "x3", &order, &mu, &wg)
				synctest.Wait()
				wg.Wait()
				got := ""
				for i, s := range order {
					if i > 0 {
						got += " "
					}
					got += s
				}
				if got != tt.want {
					t.Errorf("order %v served %q, want %q", tt.order, got, tt.want)
				}
			})
		})
	}
}

func TestQueueFullAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 1}})
		m := l.Wrap(slowModel(time.Second, 1))
		var wg sync.WaitGroup
		wg.Go(func() { m.Generate(t.Context(), req("a", 1)) })
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		wg.Go(func() { _, err := m.Generate(ctx, req("a", 1)); errc <- err })
		synctest.Wait()
		if _, err := m.Generate(t.Context(), req("a", 1)); !errors.Is(err, ErrOverloaded) {
			t.Errorf("call with the slot and the queue full = %v, want ErrOverloaded", err)
		}
		cancel()
		if err := <-errc; portico.ClassOf(err) != portico.Canceled {
			t.Errorf("canceled queued call = %v, want Canceled", err)
		}
		wg.Wait()
		if n := l.inflightOf(req("a", 1)); n != 0 {
			t.Errorf("in flight at the end = %d, want 0", n)
		}
	})
}

// TestStarvationGuard: under PLAS a program with much attained service is
// promoted once its waits reach β times its service.
func TestStarvationGuard(t *testing.T) {
	cfg := Config{Queue: Queue{Order: PLAS, PLAS: PLASConfig{Quantum: time.Second, Levels: 8, Starvation: 2}}}
	now := time.Hour // the Limiter's clock
	long := &program{attained: 10 * time.Second}
	short := &program{attained: 0}
	wl := &waiter{seq: 1, enq: now, prog: long}
	ws := &waiter{seq: 2, enq: now, prog: short}
	if cfg.Queue.better(wl, ws, now) {
		t.Errorf("PLAS at once: long program first, want short")
	}
	if got := cfg.Queue.plasLevel(wl, now); got != 3 {
		t.Errorf("level of 10s attained with 1s quantum = %d, want 3 ([7s, 15s))", got)
	}
	later := now + 20*time.Second // waited 20s = 2 x 10s of service
	if !cfg.Queue.better(wl, ws, later) {
		t.Errorf("after waiting 2x its service: short program still first, want the long one promoted (FCFS within level 0)")
	}
	for _, tt := range []struct {
		a    time.Duration
		want int
	}{{0, 0}, {999 * time.Millisecond, 0}, {time.Second, 1}, {3 * time.Second, 2}, {time.Hour, 7}} {
		if got := level(tt.a, time.Second, 8); got != tt.want {
			t.Errorf("level(%v, 1s, 8) = %d, want %d", tt.a, got, tt.want)
		}
	}
}

// TestPanicReleases: a panic in the model passes through after the slot is
// freed.
func TestPanicReleases(t *testing.T) {
	l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}})
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { panic("boom") }))
	func() {
		defer func() {
			if recover() != "boom" {
				t.Errorf("panic did not pass through")
			}
		}()
		m.Generate(context.Background(), req("a", 1))
	}()
	if n := l.inflightOf(req("a", 1)); n != 0 {
		t.Errorf("in flight after a panic = %d, want 0", n)
	}
}

// panicObserver panics on every event of kind k.
type panicObserver portico.EventKind

func (k panicObserver) Observe(_ context.Context, e portico.Event) {
	if e.Kind == portico.EventKind(k) {
		panic("observer")
	}
}

// TestObserverPanicReleases: an Observer that panics on a wait event passes
// its panic through without keeping the waiting call's slot or its place in
// line: afterwards the key has nothing in flight and nobody holding tokens,
// so a call admitted 10s later (the refill of the whole burst) takes them.
func TestObserverPanicReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{Tokens: 600, TokenBurst: 100, MaxInFlight: 1}, Mode: Wait, Estimator: fixedEstimator(0)})
		m := l.Wrap(okModel(0, 100))
		r := req("a", 100)
		if _, err := m.Generate(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		ctx := portico.ContextWithObserver(t.Context(), panicObserver(portico.EventRateLimitWait))
		func() {
			defer func() {
				if p := recover(); p != "observer" {
					t.Errorf("recover() = %v, want the Observer's panic", p)
				}
			}()
			m.Generate(ctx, r)
		}()
		if n := l.inflightOf(r); n != 0 {
			t.Errorf("in flight after an Observer panic = %d, want 0", n)
		}
		e := l.acquire(l.keyOf(r), r, mono.Now())
		holds := e.held()
		e.mu.Unlock()
		if holds != 0 {
			t.Errorf("waiters in line after an Observer panic = %d, want 0", holds)
		}
		time.Sleep(10 * time.Second)
		if _, err := m.Generate(t.Context(), r); err != nil {
			t.Errorf("call 10s later = %v, want admitted (nothing held for the panicked call)", err)
		}
	})
}

// TestLockFreeCompletions: completions that skip the entry's lock (see
// Limiter.complete) still free their slots for queued calls and refund
// every unused token. Eight goroutines on one key with L_max = 2 and a queue
// that holds them all: every call is admitted, never more than 2 run at
// once, nothing is left in flight, and the token level is the burst less
// exactly the tokens used (the refill, 1 token per 10^6 hours, is nil).
func TestLockFreeCompletions(t *testing.T) {
	const workers, calls, lmax = 8, 300, 2
	const burst = 1_000_000_000
	l := mustNew(t, Config{Limits: Limits{Tokens: 1, TokenBurst: burst, Period: 1e6 * time.Hour, MaxInFlight: lmax}, Estimator: fixedEstimator(10), Queue: Queue{Size: workers}})
	var running, most atomic.Int32
	var used atomic.Int64
	m := l.Wrap(portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
		n := running.Add(1)
		for {
			if m := most.Load(); n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		runtime.Gosched()
		running.Add(-1)
		out := r.MaxOutputTokens / 2
		used.Add(int64(10 + out))
		return &portico.Response{Usage: portico.Usage{InputTokens: 10, OutputTokens: out}}, nil
	}))
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				if _, err := m.Generate(context.Background(), req("a", 2+(w*calls+i)%50)); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed, want none (the queue holds every worker)", n, workers*calls)
	}
	if n := most.Load(); n > lmax {
		t.Errorf("most calls running at once = %d, want <= %d", n, lmax)
	}
	if n := l.inflightOf(req("a", 1)); n != 0 {
		t.Errorf("in flight after all calls = %d, want 0", n)
	}
	want := float64(burst - used.Load())
	if got := l.levelOf(req("a", 1), time.Now()); math.Abs(got-want) > 1e-3 {
		t.Errorf("token level = %v, want burst - used = %v", got, want)
	}
}

// TestInFlightStress: real goroutines on one key, for each queue order,
// with a queue too short for them all (so calls are shed) and contexts
// canceled at random moments (in the queue, at the grant, in the model):
// never more than L_max calls run at once, and afterwards nothing is in
// flight, queued, held or active in any program, and the token level is the
// burst less exactly what the admitted calls kept (the usage of a success,
// the whole reserve of a canceled call; the refill, 1 token per 10^6 hours,
// is nil). Run with -race.
func TestInFlightStress(t *testing.T) {
	const workers, calls, lmax = 12, 150, 3
	const burst = 1_000_000_000
	for _, order := range []Order{FCFSCall, FCFSProgram, PLAS} {
		t.Run(order.String(), func(t *testing.T) {
			l := mustNew(t, Config{Limits: Limits{Tokens: 1, TokenBurst: burst, Period: 1e6 * time.Hour, MaxInFlight: lmax},
				Estimator: fixedEstimator(10), Queue: Queue{Size: 4, Order: order, PLAS: PLASConfig{Quantum: time.Microsecond}}})
			var running, most atomic.Int32
			var kept atomic.Int64
			m := l.Wrap(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
				n := running.Add(1)
				for {
					if m := most.Load(); n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched()
				running.Add(-1)
				if ctx.Err() != nil {
					kept.Add(int64(10 + r.MaxOutputTokens)) // Canceled: no refund
					return nil, portico.FromContext(ctx)
				}
				out := r.MaxOutputTokens / 2
				kept.Add(int64(10 + out))
				return &portico.Response{Usage: portico.Usage{InputTokens: 10, OutputTokens: out}}, nil
			}))
			var wg, cancels sync.WaitGroup
			var admitted, shed, canceled atomic.Int32
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 9))
					r := req("a", 0)
					r.Identity.SessionID = "s" + strconv.Itoa(w%4)
					for i := range calls {
						r.MaxOutputTokens = 2 + (w*calls+i)%50
						ctx, cancel := context.WithCancel(context.Background())
						if rng.IntN(4) == 0 {
							yields := rng.IntN(3)
							cancels.Go(func() {
								for range yields {
									runtime.Gosched()
								}
								cancel()
							})
						}
						_, err := m.Generate(ctx, r)
						cancel()
						switch {
						case err == nil:
							admitted.Add(1)
						case errors.Is(err, ErrOverloaded):
							shed.Add(1)
						case portico.ClassOf(err) == portico.Canceled:
							canceled.Add(1)
						default:
							t.Errorf("call = %v, want nil, ErrOverloaded or Canceled", err)
						}
					}
				})
			}
			wg.Wait()
			cancels.Wait()
			if n := most.Load(); n > lmax {
				t.Errorf("most calls running at once = %d, want <= %d", n, lmax)
			}
			// Whether any call is shed depends on how the goroutines interleave
			// (on a loaded machine they may run one after another), so only
			// the invariants below are asserted; TestShed and
			// TestQueueFullAndCancel pin shedding itself deterministically.
			if admitted.Load() == 0 {
				t.Errorf("admitted %d, shed %d, canceled %d: want some admitted", admitted.Load(), shed.Load(), canceled.Load())
			}
			e := l.acquire(l.keyOf(req("a", 1)), nil, mono.Now())
			inflight, queue, holds := e.inflight, e.queued(), e.held()
			active := 0
			for _, p := range e.w().programs {
				active += p.active
			}
			level, _ := e.tok.at(mono.Now())
			e.mu.Unlock()
			if inflight != 0 || queue != 0 || holds != 0 || active != 0 {
				t.Errorf("after all calls: in flight %d, queued %d, holds %d, program calls active %d; want all 0", inflight, queue, holds, active)
			}
			if want := float64(burst - kept.Load()); math.Abs(level-want) > 1e-3 {
				t.Errorf("token level = %v, want burst - kept = %v", level, want)
			}
			t.Logf("admitted %d, shed %d, canceled %d", admitted.Load(), shed.Load(), canceled.Load())
		})
	}
}

// A hedge takes spare capacity only: at the cap it is shed at once where
// a first attempt queues, and where a first attempt waits for tokens it
// is refused at once, with the wait as its RetryAfter.
func TestHedgeTakesSpareCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}, Queue: Queue{Size: 4}})
		m := l.Wrap(slowModel(time.Second, 1))
		var wg sync.WaitGroup
		wg.Go(func() { m.Generate(t.Context(), req("a", 1)) })
		synctest.Wait()
		hedge := req("a", 1)
		hedge.Hedge = true
		start := time.Now()
		if _, err := m.Generate(t.Context(), hedge); !errors.Is(err, ErrOverloaded) || time.Since(start) != 0 {
			t.Errorf("hedge at the cap = %v after %v, want ErrOverloaded at once", err, time.Since(start))
		}
		if _, err := m.Generate(t.Context(), req("a", 1)); err != nil || time.Since(start) != 2*time.Second {
			t.Errorf("first attempt at the cap = %v after %v, want queued, answered after 2s", err, time.Since(start))
		}
		wg.Wait()

		w := mustNew(t, Config{Limits: Limits{Requests: 1, Period: time.Second}, Mode: Wait})
		fast := w.Wrap(slowModel(0, 1))
		fast.Generate(t.Context(), req("a", 1))
		start = time.Now()
		_, err := fast.Generate(t.Context(), hedge)
		if ra := portico.RetryAfterOf(err); !errors.Is(err, ErrLimited) || ra != time.Second || time.Since(start) != 0 {
			t.Errorf("hedge short of a request token = %v (RetryAfter %v) after %v, want ErrLimited, 1s, at once", err, ra, time.Since(start))
		}
		if _, err := fast.Generate(t.Context(), req("a", 1)); err != nil || time.Since(start) != time.Second {
			t.Errorf("first attempt short of a token = %v after %v, want answered after a 1s wait", err, time.Since(start))
		}
	})
}
