package effect

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// lossyStore is a MemoryStore that a test can empty (a restart without
// persistence, a FLUSHALL, a failover to a replica that missed the
// writes), and whose next PutIfAbsent or Update can apply and then fail
// (its reply lost), or fail without applying.
type lossyStore struct {
	mu sync.Mutex
	s  *MemoryStore

	lostPut    atomic.Int32 // PutIfAbsent calls left that apply, then fail
	lostUpdate atomic.Int32 // Update calls left that fail without applying
}

var errLostReply = errors.New("i/o timeout")

func newLossyStore() *lossyStore {
	s, _ := NewMemoryStore(MemoryConfig{})
	return &lossyStore{s: s}
}

func (l *lossyStore) store() *MemoryStore {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s
}

// lose forgets every record.
func (l *lossyStore) lose() {
	s, _ := NewMemoryStore(MemoryConfig{})
	l.mu.Lock()
	l.s = s
	l.mu.Unlock()
}

func (l *lossyStore) Get(ctx context.Context, key Key) (Record, bool, error) {
	return l.store().Get(ctx, key)
}

func (l *lossyStore) PutIfAbsent(ctx context.Context, key Key, rec Record) (Record, bool, error) {
	cur, ok, err := l.store().PutIfAbsent(ctx, key, rec)
	if l.lostPut.Add(-1) >= 0 {
		return Record{}, false, errLostReply
	}
	return cur, ok, err
}

func (l *lossyStore) Update(ctx context.Context, key Key, prev, next Record) (bool, error) {
	if l.lostUpdate.Add(-1) >= 0 {
		return false, errLostReply
	}
	return l.store().Update(ctx, key, prev, next)
}

// TestStoreLossWhilePending: one process runs the effect, another polls the
// pending key, and the store loses its records. The poller, which had seen
// the key pending within its lease, finds it absent: it reports Unknown
// (ReasonLost) instead of running the effect again. The owner, which
// knows its outcome, writes it back over the Unknown record, so later
// callers get its result. Without the rule the poller claimed the absent
// key and ran the effect a second time, both told ok.
func TestStoreLossWhilePending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLossyStore()
		cfg := Config{Store: store, Poll: 100 * time.Millisecond}
		a, b := newRunner(t, cfg), newRunner(t, cfg)
		key := mustKey(t, "op", "charge", `{"amount":5}`)
		var runs atomic.Int32
		release := make(chan struct{})
		charge := func(context.Context) ([]byte, error) { runs.Add(1); <-release; return []byte(`"ch_1"`), nil }
		done := make(chan error)
		go func() { _, err := a.Do(context.Background(), key, charge); done <- err }()
		synctest.Wait()
		// The owner beats at 100, 200, 300 ms...; b polls at 50, 150, 250,
		// 350 ms...: the loss at 320 ms is seen by b before the owner's beat
		// sends the claim again (TestStoreLossHeartbeat is the other order).
		time.Sleep(50 * time.Millisecond)
		polled := make(chan error)
		go func() { _, err := b.Do(context.Background(), key, charge); polled <- err }()
		time.Sleep(270 * time.Millisecond)
		store.lose()
		err := <-polled
		if !errors.Is(err, ErrUnknown) || portico.ClassOf(err) != portico.Ambiguous {
			t.Fatalf("the poller's Do after the loss = %v, want an ambiguous ErrUnknown", err)
		}
		if rec, ok, _ := b.Status(context.Background(), key); !ok || rec.State != Unknown || rec.Reason != ReasonLost {
			t.Fatalf("Status after the loss = %+v, %v; want unknown, %q", rec, ok, ReasonLost)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("the owner's Do = %v, want nil", err)
		}
		res, err := b.Do(context.Background(), key, charge)
		if err != nil || string(res) != `"ch_1"` || runs.Load() != 1 {
			t.Fatalf("Do after the owner finished = %s, %v, runs %d; want the owner's result, run once", res, err, runs.Load())
		}
	})
}

// TestStoreLossThenNewcomer: the store loses the record of a run under
// way and a caller that never saw it claims the key and runs the effect
// again (the store cannot tell it what it lost). The first owner, whose
// record another run now holds, is told Unknown with its result: two runs
// are never reported as two successes.
func TestStoreLossThenNewcomer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLossyStore()
		cfg := Config{Store: store}
		a, c := newRunner(t, cfg), newRunner(t, cfg)
		key := mustKey(t, "op", "charge", `{"amount":5}`)
		var runs atomic.Int32
		release := make(chan struct{})
		type out struct {
			res []byte
			err error
		}
		done := make(chan out)
		go func() {
			res, err := a.Do(context.Background(), key, func(context.Context) ([]byte, error) { runs.Add(1); <-release; return []byte(`1`), nil })
			done <- out{res, err}
		}()
		synctest.Wait()
		store.lose()
		if _, err := c.Do(context.Background(), key, func(context.Context) ([]byte, error) { runs.Add(1); return []byte(`2`), nil }); err != nil {
			t.Fatalf("the newcomer's Do = %v", err)
		}
		close(release)
		o := <-done
		if runs.Load() != 2 || string(o.res) != "1" || !errors.Is(o.err, ErrUnknown) {
			t.Fatalf("the first owner's Do = %s, %v after %d runs; want its result with ErrUnknown", o.res, o.err, runs.Load())
		}
	})
}

// TestLostClaimReplyRunsOnRetry: the store kept a claim whose reply was
// lost, and could not be reached to release it. Do says nothing ran (a
// Transient ErrStore); the caller's retry claims with the same token, which
// the store recognises as its own, and runs the effect at once. It used to
// find "another run's" claim and wait out the 5-minute lease, then report
// Unknown for an effect that never ran.
func TestLostClaimReplyRunsOnRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLossyStore()
		r := newRunner(t, Config{Store: store})
		key := mustKey(t, "op", "charge", `{"amount":5}`)
		var runs atomic.Int32
		charge := func(context.Context) ([]byte, error) { runs.Add(1); return []byte(`1`), nil }
		store.lostPut.Store(1)
		store.lostUpdate.Store(1) // the release fails too
		_, err := r.Do(context.Background(), key, charge)
		if !errors.Is(err, ErrStore) || portico.ClassOf(err) != portico.Transient || runs.Load() != 0 {
			t.Fatalf("Do with the claim's reply lost = %v after %d runs; want a transient ErrStore, nothing run", err, runs.Load())
		}
		if rec, ok, _ := r.Status(context.Background(), key); !ok || rec.State != Pending {
			t.Fatalf("Status = %+v, %v; want the claim kept pending in the store", rec, ok)
		}
		start := time.Now()
		res, err := r.Do(context.Background(), key, charge)
		if err != nil || string(res) != "1" || runs.Load() != 1 || time.Since(start) != 0 {
			t.Fatalf("the retry = %s, %v after %d runs and %v; want the effect run once, at once", res, err, runs.Load(), time.Since(start))
		}
	})
}

// TestLostClaimReplyReleased: when the store answers again at once, the
// claim whose reply was lost is released: any process's next Do runs it.
func TestLostClaimReplyReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLossyStore()
		a, b := newRunner(t, Config{Store: store}), newRunner(t, Config{Store: store})
		key := mustKey(t, "op", "charge", `{"amount":5}`)
		store.lostPut.Store(1)
		if _, err := a.Do(context.Background(), key, mustNotRun(t)); !errors.Is(err, ErrStore) {
			t.Fatalf("Do with the claim's reply lost = %v, want ErrStore", err)
		}
		res, err := b.Do(context.Background(), key, func(context.Context) ([]byte, error) { return []byte(`1`), nil })
		if err != nil || string(res) != "1" {
			t.Fatalf("another process's Do = %s, %v; want the effect run", res, err)
		}
	})
}

func TestEmptyKeyRefused(t *testing.T) {
	r := newRunner(t, Config{})
	ctx := context.Background()
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, ErrKey) || portico.ClassOf(err) != portico.Permanent {
			t.Errorf("%s with the empty key = %v, want a permanent ErrKey", name, err)
		}
	}
	_, err := r.Do(ctx, "", mustNotRun(t))
	check("Do", err)
	_, err = r.DoArgs(ctx, "", json.RawMessage(`{}`), mustNotRun(t))
	check("DoArgs", err)
	_, err = Once(ctx, r, "", func(context.Context) (int, error) { t.Error("ran"); return 0, nil })
	check("Once", err)
	_, _, err = r.Status(ctx, "")
	check("Status", err)
	check("Resolve", r.Resolve(ctx, "", Outcome{}))
	_, err = StepKey("op")
	check("StepKey with no step", err)
	if _, err := StepKey("", "s"); !errors.Is(err, ErrOperation) {
		t.Errorf("StepKey with no operation = %v, want ErrOperation", err)
	}
}

func TestStepKey(t *testing.T) {
	k, err := StepKey("op/1", "step-3", "charge")
	if err != nil || k != "4:op/1/6:step-3/6:charge" {
		t.Fatalf("StepKey = %q, %v", k, err)
	}
	if a, b := mustStep(t, "a/b", "c"), mustStep(t, "a", "b/c"); a == b {
		t.Errorf("StepKey(a/b, c) == StepKey(a, b/c) = %s", a)
	}
	// A step key never equals an argument key: NewKey ends with 64 hex
	// digits, a step key's last part with its length and a colon.
	nk := mustKey(t, "op", "t", `{}`)
	if sk := mustStep(t, "op", "t", string(nk[len("2:op/1:t/"):])); sk == nk {
		t.Errorf("StepKey = NewKey = %s", sk)
	}
}

func mustStep(t *testing.T, op string, step ...string) Key {
	t.Helper()
	k, err := StepKey(op, step...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestArgumentsDiffer: a step's callers with other arguments get the
// step's outcome, told so, whether the run is under way in this process,
// completed, or failed; the same arguments in another spelling are the
// same; invalid arguments are refused before anything is claimed.
func TestArgumentsDiffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRunner(t, Config{})
		ctx := context.Background()
		key := mustStep(t, "op", "step-1", "charge")
		var runs atomic.Int32
		charge := func(context.Context) ([]byte, error) {
			runs.Add(1)
			time.Sleep(time.Second)
			return []byte(`"ch_1"`), nil
		}
		var wg sync.WaitGroup
		var same, other []byte
		var sameErr, otherErr error
		wg.Go(func() { r.DoArgs(ctx, key, json.RawMessage(`{"amount":5,"note":"a"}`), charge) })
		synctest.Wait()
		wg.Go(func() { same, sameErr = r.DoArgs(ctx, key, json.RawMessage(`{"note":"a","amount":5.0}`), charge) })
		wg.Go(func() { other, otherErr = r.DoArgs(ctx, key, json.RawMessage(`{"amount":5,"note":"b"}`), charge) })
		wg.Wait()
		if string(same) != `"ch_1"` || sameErr != nil {
			t.Errorf("a waiter with the same arguments = %s, %v; want the result, nil", same, sameErr)
		}
		if string(other) != `"ch_1"` || !errors.Is(otherErr, ErrArgumentsDiffer) {
			t.Errorf("a waiter with other arguments = %s, %v; want the result with ErrArgumentsDiffer", other, otherErr)
		}
		res, err := r.DoArgs(ctx, key, json.RawMessage(`{"amount":6}`), charge)
		if string(res) != `"ch_1"` || !errors.Is(err, ErrArgumentsDiffer) || portico.ClassOf(err) != portico.Permanent {
			t.Errorf("a later caller with other arguments = %s, %v; want the result with a permanent ErrArgumentsDiffer", res, err)
		}
		if res, err := r.Do(ctx, key, charge); string(res) != `"ch_1"` || err != nil {
			t.Errorf("Do (no arguments recorded) = %s, %v; want the result, nil", res, err)
		}
		if runs.Load() != 1 {
			t.Errorf("runs = %d, want 1", runs.Load())
		}

		declined := mustStep(t, "op", "step-2", "charge")
		r.DoArgs(ctx, declined, json.RawMessage(`{"amount":5}`), func(context.Context) ([]byte, error) {
			return nil, &portico.Error{Class: portico.Permanent, Reason: "card declined"}
		})
		_, err = r.DoArgs(ctx, declined, json.RawMessage(`{"amount":7}`), mustNotRun(t))
		if !errors.Is(err, ErrFailed) || !errors.Is(err, ErrArgumentsDiffer) || portico.ClassOf(err) != portico.Permanent {
			t.Errorf("a failed step with other arguments = %v, want ErrFailed and ErrArgumentsDiffer", err)
		}
		if _, err := r.DoArgs(ctx, mustStep(t, "op", "step-3"), json.RawMessage(`{`), mustNotRun(t)); !errors.Is(err, ErrArguments) {
			t.Errorf("DoArgs with invalid JSON = %v, want ErrArguments", err)
		}
		if _, err := OnceArgs(ctx, r, mustStep(t, "op", "step-3"), json.RawMessage(`{`), func(context.Context) (int, error) { return 0, nil }); !errors.Is(err, ErrArguments) {
			t.Errorf("OnceArgs with invalid JSON = %v, want ErrArguments", err)
		}
	})
}

// TestStoreLossHeartbeat: the store loses the record of a run under way
// and, a Poll later, a caller that never saw the key asks for it. The
// owner has sent its claim again meanwhile, so the newcomer finds the key
// pending and gets the owner's result: the effect runs once. Without the
// heartbeat the newcomer found the key absent and ran it again.
func TestStoreLossHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLossyStore()
		cfg := Config{Store: store, Poll: 100 * time.Millisecond}
		a, c := newRunner(t, cfg), newRunner(t, cfg)
		key := mustKey(t, "op", "charge", `{"amount":5}`)
		var runs atomic.Int32
		charge := func(context.Context) ([]byte, error) { runs.Add(1); time.Sleep(time.Second); return []byte(`1`), nil }
		done := make(chan error)
		go func() { _, err := a.Do(context.Background(), key, charge); done <- err }()
		time.Sleep(300 * time.Millisecond)
		store.lose()
		time.Sleep(150 * time.Millisecond) // a beat
		res, err := c.Do(context.Background(), key, charge)
		if err != nil || string(res) != "1" || runs.Load() != 1 {
			t.Fatalf("a newcomer's Do a beat after the loss = %s, %v after %d runs; want the owner's result, run once", res, err, runs.Load())
		}
		if err := <-done; err != nil {
			t.Fatalf("the owner's Do = %v", err)
		}
	})
}

// TestUnsureClaimsBounded: a Do whose context has ended remembers no
// claim token (nothing was sent), and the tokens kept are bounded.
func TestUnsureClaimsBounded(t *testing.T) {
	r := newRunner(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 10 {
		r.Do(ctx, mustStep(t, "op", string(rune('a'+i))), mustNotRun(t))
	}
	store := newLossyStore()
	lossy := newRunner(t, Config{Store: store})
	for i := range maxUnsure + 10 {
		store.lostPut.Store(1)
		store.lostUpdate.Store(1)
		lossy.Do(context.Background(), mustStep(t, "op", strconv.Itoa(i)), mustNotRun(t))
	}
	r.mu.Lock()
	n := len(r.unsure)
	r.mu.Unlock()
	lossy.mu.Lock()
	m := len(lossy.unsure)
	lossy.mu.Unlock()
	if n != 0 || m != maxUnsure {
		t.Errorf("tokens kept = %d after canceled Dos, %d after %d lost claims; want 0 and %d", n, m, maxUnsure+10, maxUnsure)
	}
}

// slowStore is a MemoryStore whose PutIfAbsent takes a second, so that
// callers of one key in a process wait on one flight.
type slowStore struct{ *MemoryStore }

func (s slowStore) PutIfAbsent(ctx context.Context, key Key, r Record) (Record, bool, error) {
	time.Sleep(time.Second)
	return s.MemoryStore.PutIfAbsent(ctx, key, r)
}

// A flight's leader that finds the step done with other arguments than its
// own tells only itself so: a waiter with the recorded arguments, or with
// none (Do), gets the result.
func TestArgumentsDifferLeaderOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := NewMemoryStore(MemoryConfig{})
		ctx := context.Background()
		key := mustStep(t, "op", "step-1", "charge")
		done := func(context.Context) ([]byte, error) { return []byte(`"ch_1"`), nil }
		if _, err := newRunner(t, Config{Store: mem}).DoArgs(ctx, key, json.RawMessage(`{"a":1}`), done); err != nil {
			t.Fatal(err)
		}
		r := newRunner(t, Config{Store: slowStore{mem}})
		var wg sync.WaitGroup
		var lead, same, plain error
		wg.Go(func() { _, lead = r.DoArgs(ctx, key, json.RawMessage(`{"a":2}`), mustNotRun(t)) })
		synctest.Wait()
		wg.Go(func() { _, same = r.DoArgs(ctx, key, json.RawMessage(`{"a":1}`), mustNotRun(t)) })
		wg.Go(func() { _, plain = r.Do(ctx, key, mustNotRun(t)) })
		wg.Wait()
		if !errors.Is(lead, ErrArgumentsDiffer) || same != nil || plain != nil {
			t.Errorf("leader %v, waiter with the recorded arguments %v, Do %v; want ErrArgumentsDiffer, nil, nil", lead, same, plain)
		}
	})
}
