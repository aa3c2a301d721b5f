package effect

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

func newRunner(t *testing.T, cfg Config) *Runner {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type receipt struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

func TestHundredCallersRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRunner(t, Config{})
		key := mustKey(t, "order-42", "charge", `{"amount":1999,"currency":"EUR"}`)
		var runs atomic.Int32
		charge := func(ctx context.Context) (receipt, error) {
			n := runs.Add(1)
			time.Sleep(time.Second) // the payment provider is slow
			return receipt{ID: "ch_" + string(rune('0'+n)), Amount: 1999}, nil
		}
		const callers = 100
		var wg sync.WaitGroup
		results := make([]receipt, callers)
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() {
				results[i], errs[i] = Once(context.Background(), r, key, charge)
			})
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("effect ran %d times, want 1", n)
		}
		want := receipt{ID: "ch_1", Amount: 1999}
		for i := range callers {
			if errs[i] != nil || results[i] != want {
				t.Fatalf("caller %d got %+v, %v; want %+v, nil", i, results[i], errs[i], want)
			}
		}
		// A later caller gets the stored result.
		got, err := Once(context.Background(), r, key, charge)
		if err != nil || got != want || runs.Load() != 1 {
			t.Fatalf("later Once = %+v, %v after %d runs; want %+v from the store", got, err, runs.Load(), want)
		}
		rec, ok, _ := r.Status(context.Background(), key)
		if !ok || rec.State != Completed {
			t.Fatalf("Status = %+v, %v, want completed", rec, ok)
		}
	})
}

func TestAmbiguousFailureIsUnknownAndNotRerun(t *testing.T) {
	for _, tt := range []struct {
		name string
		fn   func(ctx context.Context) ([]byte, error)
		msg  string // on one line
	}{
		{"ambiguous error", func(context.Context) ([]byte, error) {
			return nil, &portico.Error{Class: portico.Ambiguous, Reason: "timeout after send"}
		}, "portico: ambiguous: effect: outcome unknown, reconcile before running again; timeout after send"},
		{"deadline during fn", func(ctx context.Context) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, "portico: ambiguous: effect: outcome unknown, reconcile before running again; context deadline exceeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRunner(t, Config{})
				key := mustKey(t, "op", "send_email", `{"to":"x"}`)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := r.Do(ctx, key, tt.fn)
				if !errors.Is(err, ErrUnknown) || portico.ClassOf(err) != portico.Ambiguous {
					t.Fatalf("Do = %v, want ambiguous ErrUnknown", err)
				}
				if err.Error() != tt.msg {
					t.Errorf("Do = %q, want %q", err, tt.msg)
				}
				rec, _, _ := r.Status(context.Background(), key)
				if rec.State != Unknown {
					t.Fatalf("state = %v, want unknown", rec.State)
				}
				runs := 0
				again := func(context.Context) ([]byte, error) { runs++; return []byte(`"sent"`), nil }
				for range 3 {
					if _, err := r.Do(context.Background(), key, again); !errors.Is(err, ErrUnknown) {
						t.Fatalf("Do again = %v, want ErrUnknown", err)
					}
				}
				if runs != 0 {
					t.Fatalf("unknown effect re-run %d times, want 0", runs)
				}

				// Reconciliation: the email was sent after all.
				if err := r.Resolve(context.Background(), key, Outcome{Happened: true, Result: []byte(`"sent"`)}); err != nil {
					t.Fatalf("Resolve = %v", err)
				}
				res, err := r.Do(context.Background(), key, again)
				if err != nil || string(res) != `"sent"` || runs != 0 {
					t.Fatalf("Do after Resolve = %s, %v (runs %d), want the resolved result without running", res, err, runs)
				}
				if err := r.Resolve(context.Background(), key, Outcome{}); !errors.Is(err, ErrNotResolvable) {
					t.Fatalf("Resolve of a completed key = %v, want ErrNotResolvable", err)
				}
				// An owner told ErrUnknown whose outcome reached the store
				// after all follows the error's advice: Resolve accepts
				// Happened and keeps the stored result.
				if err := r.Resolve(context.Background(), key, Outcome{Happened: true, Result: []byte(`"other"`)}); err != nil {
					t.Fatalf("Resolve(Happened) of a completed key = %v, want nil", err)
				}
				if res, err := r.Do(context.Background(), key, again); err != nil || string(res) != `"sent"` || runs != 0 {
					t.Fatalf("Do after Resolve of a completed key = %s, %v (runs %d), want the stored result", res, err, runs)
				}
			})
		})
	}
}

func TestResolveNotHappenedAllowsRerun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRunner(t, Config{})
		key := mustKey(t, "op", "ticket", `{}`)
		r.Do(context.Background(), key, func(context.Context) ([]byte, error) {
			return nil, &portico.Error{Class: portico.Ambiguous}
		})
		if err := r.Resolve(context.Background(), key, Outcome{Happened: false}); err != nil {
			t.Fatal(err)
		}
		runs := 0
		res, err := r.Do(context.Background(), key, func(context.Context) ([]byte, error) { runs++; return []byte(`1`), nil })
		if err != nil || string(res) != "1" || runs != 1 {
			t.Fatalf("Do after resolving not-run = %s, %v, runs %d; want 1, nil, 1", res, err, runs)
		}
	})
}

func TestFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRunner(t, Config{})
		ctx := context.Background()
		runs := 0

		// A transient failure says the effect did not happen: the next call runs it.
		k1 := mustKey(t, "op", "a", `{}`)
		flaky := &portico.Error{Class: portico.Transient, Reason: "503"}
		if _, err := r.Do(ctx, k1, func(context.Context) ([]byte, error) { runs++; return nil, flaky }); err != flaky {
			t.Fatalf("Do = %v, want fn's error", err)
		}
		if res, err := r.Do(ctx, k1, func(context.Context) ([]byte, error) { runs++; return []byte(`"ok"`), nil }); err != nil || string(res) != `"ok"` {
			t.Fatalf("Do after a transient failure = %s, %v", res, err)
		}
		if runs != 2 {
			t.Fatalf("runs = %d, want 2", runs)
		}

		// A permanent failure is returned as recorded, not re-run.
		k2 := mustKey(t, "op", "b", `{}`)
		declined := &portico.Error{Class: portico.Permanent, Reason: "card declined"}
		r.Do(ctx, k2, func(context.Context) ([]byte, error) { return nil, declined })
		_, err := r.Do(ctx, k2, func(context.Context) ([]byte, error) { runs++; return nil, nil })
		var pe *portico.Error
		if !errors.Is(err, ErrFailed) || !errors.As(err, &pe) || pe.Class != portico.Permanent || pe.Reason != "card declined" || runs != 2 {
			t.Fatalf("Do after a permanent failure = %v (runs %d), want ErrFailed with the recorded class and reason", err, runs)
		}
	})
}

func TestPanicRecordsUnknown(t *testing.T) {
	r := newRunner(t, Config{})
	key := mustKey(t, "op", "p", `{}`)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic swallowed")
			}
		}()
		r.Do(context.Background(), key, func(context.Context) ([]byte, error) { panic("boom") })
	}()
	if _, err := r.Do(context.Background(), key, func(context.Context) ([]byte, error) { return nil, nil }); !errors.Is(err, ErrUnknown) {
		t.Fatalf("Do after a panic = %v, want ErrUnknown", err)
	}
}

func TestWaiterHonoursItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRunner(t, Config{})
		key := mustKey(t, "op", "slow", `{}`)
		release := make(chan struct{})
		var runs atomic.Int32
		slow := func(context.Context) ([]byte, error) { runs.Add(1); <-release; return []byte(`"done"`), nil }
		leaderDone := make(chan error)
		go func() { _, err := r.Do(context.Background(), key, slow); leaderDone <- err }()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := r.Do(ctx, key, slow)
		if portico.ClassOf(err) != portico.Deadline || time.Since(start) != time.Second {
			t.Fatalf("waiter Do = %v after %v, want deadline after 1s", err, time.Since(start))
		}
		close(release)
		if err := <-leaderDone; err != nil {
			t.Fatal(err)
		}
		if runs.Load() != 1 {
			t.Fatalf("runs = %d, want 1", runs.Load())
		}
	})
}

func TestPendingInAnotherProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, _ := NewMemoryStore(MemoryConfig{})
		r := newRunner(t, Config{Store: store, Poll: 100 * time.Millisecond, Lease: time.Minute})
		ctx := context.Background()
		key := mustKey(t, "op", "x", `{}`)
		// Another process holds the key.
		other := Record{State: Pending, Owner: "other", Lease: time.Now().Add(time.Minute), Expires: time.Now().Add(time.Hour)}
		store.PutIfAbsent(ctx, key, other)
		go func() {
			time.Sleep(350 * time.Millisecond)
			store.Update(ctx, key, other, Record{State: Completed, Result: []byte(`7`), Owner: "other", Expires: time.Now().Add(time.Hour)})
		}()
		start := time.Now()
		res, err := r.Do(ctx, key, func(context.Context) ([]byte, error) { t.Error("ran a key pending elsewhere"); return nil, nil })
		if err != nil || string(res) != "7" {
			t.Fatalf("Do = %s, %v, want the other process's result", res, err)
		}
		if d := time.Since(start); d != 400*time.Millisecond {
			t.Fatalf("Do returned after %v, want 400ms (the first poll after completion)", d)
		}

		// A pending key whose owner's lease ran out is unknown, not re-run.
		k2 := mustKey(t, "op", "y", `{}`)
		store.PutIfAbsent(ctx, k2, Record{State: Pending, Owner: "dead", Lease: time.Now().Add(time.Second), Expires: time.Now().Add(time.Hour)})
		time.Sleep(time.Second)
		if _, err := r.Do(ctx, k2, func(context.Context) ([]byte, error) { t.Error("ran a key of a lost owner"); return nil, nil }); !errors.Is(err, ErrUnknown) {
			t.Fatalf("Do on an expired lease = %v, want ErrUnknown", err)
		}
		if err := r.Resolve(ctx, k2, Outcome{Happened: true, Result: []byte(`1`)}); err != nil {
			t.Fatalf("Resolve of an expired lease = %v", err)
		}
	})
}

func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, _ := NewMemoryStore(MemoryConfig{MaxEntries: 2})
		r := newRunner(t, Config{Store: store, TTL: time.Hour})
		ctx := context.Background()
		runs := 0
		fn := func(context.Context) ([]byte, error) { runs++; return []byte(`true`), nil }
		k := mustKey(t, "op", "k", `{}`)
		r.Do(ctx, k, fn)
		time.Sleep(time.Hour - time.Second)
		r.Do(ctx, k, fn)
		if runs != 1 {
			t.Fatalf("runs within the TTL = %d, want 1", runs)
		}
		time.Sleep(time.Second)
		r.Do(ctx, k, fn)
		if runs != 2 {
			t.Fatalf("runs after the TTL = %d, want 2 (the outcome expired)", runs)
		}

		// Bounded: a full store refuses new keys rather than forget live ones.
		r.Do(ctx, mustKey(t, "op", "k2", `{}`), fn)
		var seen []portico.Event
		octx := portico.ContextWithObserver(ctx, observerFunc(func(e portico.Event) { seen = append(seen, e) }))
		_, err := r.Do(octx, mustKey(t, "op", "k3", `{}`), fn)
		if !errors.Is(err, ErrFull) || !errors.Is(err, ErrStore) || portico.ClassOf(err) != portico.Transient {
			t.Fatalf("Do on a full store = %v, want transient ErrStore wrapping ErrFull", err)
		}
		if want := "portico: transient: " + ErrStore.Error() + "; " + ErrFull.Error(); err.Error() != want {
			t.Errorf("Do on a full store = %q, want %q", err, want)
		}
		if len(seen) != 1 || seen[0].Kind != portico.EventSharedStore || seen[0].Reason != "effect:fail_closed" {
			t.Errorf("events of a Do the store refused = %+v, want one effect:fail_closed", seen)
		}
		if runs != 3 {
			t.Fatalf("runs = %d, want 3 (nothing ran on the full store)", runs)
		}
		// Once the records expire, the sweep frees room.
		time.Sleep(time.Hour)
		if _, err := r.Do(ctx, mustKey(t, "op", "k3", `{}`), fn); err != nil {
			t.Fatalf("Do after expiry = %v", err)
		}
		if n := store.Len(); n != 1 {
			t.Fatalf("store.Len() = %d after the sweep, want 1", n)
		}
	})
}

func TestNewRejectsNegative(t *testing.T) {
	for _, cfg := range []Config{{TTL: -1}, {Lease: -1}, {Poll: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error, want one", cfg)
		}
	}
	if _, err := NewMemoryStore(MemoryConfig{MaxEntries: -1}); err == nil {
		t.Error("NewMemoryStore(-1) = nil error, want one")
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Pending: "pending", Completed: "completed", Failed: "failed", Unknown: "unknown", 0: "State(0)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
	}
}

func TestOnceResultThatDoesNotEncodeIsUnknown(t *testing.T) {
	r := newRunner(t, Config{})
	key := mustKey(t, "op", "weird", `{}`)
	runs := 0
	fn := func(context.Context) (func(), error) { runs++; return func() {}, nil }
	if _, err := Once(context.Background(), r, key, fn); !errors.Is(err, ErrUnknown) {
		t.Fatalf("Once with an unencodable result = %v, want ErrUnknown", err)
	}
	if _, err := Once(context.Background(), r, key, fn); !errors.Is(err, ErrUnknown) || runs != 1 {
		t.Fatalf("Once again = %v after %d runs, want ErrUnknown after 1", err, runs)
	}
}

func TestResultsAreCopies(t *testing.T) {
	r := newRunner(t, Config{})
	key := mustKey(t, "op", "c", `{}`)
	res, _ := r.Do(context.Background(), key, func(context.Context) ([]byte, error) { return []byte(`"abc"`), nil })
	res[1] = 'X'
	again, _ := r.Do(context.Background(), key, mustNotRun(t))
	if string(again) != `"abc"` {
		t.Fatalf("stored result = %s after the caller modified its copy, want \"abc\"", again)
	}
}

func TestWaiterOutlivesLeaderThatGaveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, _ := NewMemoryStore(MemoryConfig{})
		r := newRunner(t, Config{Store: store, Poll: 100 * time.Millisecond})
		ctx := context.Background()
		key := mustKey(t, "op", "z", `{}`)
		other := Record{State: Pending, Owner: "other", Lease: time.Now().Add(time.Minute), Expires: time.Now().Add(time.Hour)}
		store.PutIfAbsent(ctx, key, other)

		short, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		defer cancel()
		leader := make(chan error)
		go func() { _, err := r.Do(short, key, mustNotRun(t)); leader <- err }()
		synctest.Wait() // the leader is polling
		waiter := make(chan []byte)
		go func() { res, _ := r.Do(ctx, key, mustNotRun(t)); waiter <- res }()

		if err := <-leader; portico.ClassOf(err) != portico.Deadline {
			t.Fatalf("leader Do = %v, want its own deadline", err)
		}
		time.Sleep(time.Second)
		store.Update(ctx, key, other, Record{State: Completed, Result: []byte(`"ok"`), Owner: "other", Expires: time.Now().Add(time.Hour)})
		if res := <-waiter; string(res) != `"ok"` {
			t.Fatalf("waiter Do = %s, want the result once the other process completed", res)
		}
	})
}

// mustNotRun is an effect that fails the test if it runs.
func mustNotRun(t *testing.T) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		t.Error("effect ran, want its stored or pending outcome")
		return nil, nil
	}
}

func TestDoneContextDoesNotClaimTheKey(t *testing.T) {
	r := newRunner(t, Config{})
	key := mustKey(t, "op", "charge", `{"amount":1}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	runs := 0
	fn := func(ctx context.Context) ([]byte, error) { runs++; return []byte(`"ok"`), ctx.Err() }
	if _, err := r.Do(ctx, key, fn); portico.ClassOf(err) != portico.Canceled || errors.Is(err, ErrUnknown) {
		t.Fatalf("Do(canceled ctx) = %v, want canceled, not unknown", err)
	}
	if rec, ok, _ := r.Status(context.Background(), key); ok || runs != 0 {
		t.Fatalf("after Do(canceled ctx): Status = %+v, %v, runs %d; want no record and no run", rec, ok, runs)
	}
	if res, err := r.Do(context.Background(), key, fn); err != nil || string(res) != `"ok"` || runs != 1 {
		t.Fatalf("Do after = %s, %v (runs %d), want the effect run once", res, err, runs)
	}
}

func TestNilFuncPanicsWithoutClaiming(t *testing.T) {
	r := newRunner(t, Config{})
	key := mustKey(t, "op", "x", `{}`)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Do(nil fn) did not panic")
			}
		}()
		r.Do(context.Background(), key, nil)
	}()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Once(nil fn) did not panic")
			}
		}()
		Once[int](context.Background(), r, key, nil)
	}()
	if rec, ok, _ := r.Status(context.Background(), key); ok {
		t.Fatalf("Status after Do(nil fn) and Once(nil fn) = %+v, want no record", rec)
	}
}

func TestLostOwnerStaysUnknownPastItsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Two processes share a store; the TTL is shorter than the lease.
		store, _ := NewMemoryStore(MemoryConfig{})
		cfg := Config{Store: store, TTL: time.Minute, Lease: 5 * time.Minute}
		a, b := newRunner(t, cfg), newRunner(t, cfg)
		key := mustKey(t, "op", "wire", `{"iban":"x"}`)
		release := make(chan struct{})
		done := make(chan error)
		go func() {
			_, err := a.Do(context.Background(), key, func(context.Context) ([]byte, error) { <-release; return []byte(`1`), nil })
			done <- err
		}()
		synctest.Wait()
		time.Sleep(5*time.Minute + time.Second) // a hangs past its lease
		if _, err := b.Do(context.Background(), key, mustNotRun(t)); !errors.Is(err, ErrUnknown) {
			t.Fatalf("Do past the owner's lease = %v, want ErrUnknown (not a second run)", err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("owner's Do = %v", err)
		}
	})
}

func TestHundredCallersAcrossRunnersRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Four runners (four processes) share one store: at-most-once rests
		// on the store's PutIfAbsent, the other callers poll for the result.
		store, _ := NewMemoryStore(MemoryConfig{})
		var runners [4]*Runner
		for i := range runners {
			runners[i] = newRunner(t, Config{Store: store, Poll: 50 * time.Millisecond})
		}
		key := mustKey(t, "order-42", "charge", `{"amount":1999,"currency":"EUR"}`)
		var runs atomic.Int32
		charge := func(ctx context.Context) (receipt, error) {
			runs.Add(1)
			time.Sleep(time.Second)
			return receipt{ID: "ch_1", Amount: 1999}, nil
		}
		const callers = 100
		var wg sync.WaitGroup
		results := make([]receipt, callers)
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() {
				results[i], errs[i] = Once(context.Background(), runners[i%len(runners)], key, charge)
			})
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("effect ran %d times, want 1", n)
		}
		for i := range callers {
			if errs[i] != nil || results[i] != (receipt{ID: "ch_1", Amount: 1999}) {
				t.Fatalf("caller %d got %+v, %v; want the one run's receipt", i, results[i], errs[i])
			}
		}
	})
}

type observerFunc func(portico.Event)

func (f observerFunc) Observe(_ context.Context, e portico.Event) { f(e) }

// TestLayerTimeoutBeforeClaimIsNotAmbiguous: a context a layer's own
// timeout ended before the key was claimed ran nothing: Do says so with the
// context's Deadline error, NotSent, not an Ambiguous one that reads as an
// effect that may have run.
func TestLayerTimeoutBeforeClaimIsNotAmbiguous(t *testing.T) {
	r := newRunner(t, Config{})
	key := mustKey(t, "op", "charge", `{"amount":1}`)
	ctx, cancel := context.WithTimeoutCause(context.Background(), -1, portico.NewLayerTimeout("share spent"))
	defer cancel()
	_, err := r.Do(ctx, key, func(context.Context) ([]byte, error) { t.Error("effect run"); return nil, nil })
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Class != portico.Deadline || !pe.NotSent || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do(layer timeout passed) = %v, want Deadline, NotSent, matching context.DeadlineExceeded", err)
	}
}
