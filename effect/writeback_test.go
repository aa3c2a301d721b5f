package effect

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// downStore is a MemoryStore that a test can take down (Redis stopped:
// every operation fails without applying) and bring back. It counts the
// operations that failed.
type downStore struct {
	s      *MemoryStore
	down   atomic.Bool
	failed atomic.Int32
}

var errDown = errors.New("i/o timeout")

func newDownStore() *downStore {
	s, _ := NewMemoryStore(MemoryConfig{})
	return &downStore{s: s}
}

func (d *downStore) fail() bool {
	if d.down.Load() {
		d.failed.Add(1)
		return true
	}
	return false
}

func (d *downStore) Get(ctx context.Context, key Key) (Record, bool, error) {
	if d.fail() {
		return Record{}, false, errDown
	}
	return d.s.Get(ctx, key)
}

func (d *downStore) PutIfAbsent(ctx context.Context, key Key, rec Record) (Record, bool, error) {
	if d.fail() {
		return Record{}, false, errDown
	}
	return d.s.PutIfAbsent(ctx, key, rec)
}

func (d *downStore) Update(ctx context.Context, key Key, prev, next Record) (bool, error) {
	if d.fail() {
		return false, errDown
	}
	return d.s.Update(ctx, key, prev, next)
}

// TestOutcomeWrittenBackAfterOutage: the store stops as an effect
// completes (Redis SIGSTOPped), so the owner's outcome is not recorded; the owner, told ok, keeps it and writes it back
// once the store answers: another process then gets the owner's result at
// once, the effect run once. The write-back costs one failed operation per
// Poll while the store is down. Without it the outcome was only logged, and
// the other process waited out the 5-minute lease, then got Unknown.
func TestOutcomeWrittenBackAfterOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newDownStore()
		cfg := Config{Store: store, Poll: 100 * time.Millisecond}
		a, b := newRunner(t, cfg), newRunner(t, cfg)
		key := mustStep(t, "op", "charge")
		var runs atomic.Int32
		charge := func(context.Context) ([]byte, error) {
			runs.Add(1)
			time.Sleep(320 * time.Millisecond)
			store.down.Store(true) // after the beats at 0.1, 0.2, 0.3 s
			return []byte(`"T"`), nil
		}
		done := make(chan error)
		var res []byte
		go func() {
			var err error
			res, err = a.Do(context.Background(), key, charge)
			done <- err
		}()
		if err := <-done; err != nil || string(res) != `"T"` {
			t.Fatalf("the owner's Do = %s, %v; want its result", res, err)
		}
		atCompletion := store.failed.Load()
		time.Sleep(1550*time.Millisecond - 320*time.Millisecond) // to 1.55 s
		store.down.Store(false)
		// The write-back tried at 0.42, 0.52, ... 1.52 s: 12 times.
		if n := store.failed.Load() - atCompletion; n != 12 {
			t.Errorf("failed store operations during the outage after completion = %d, want 12 (one per Poll)", n)
		}
		time.Sleep(300 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		got, err := b.Do(ctx, key, mustNotRun(t))
		if err != nil || string(got) != `"T"` || runs.Load() != 1 || time.Since(start) != 0 {
			t.Fatalf("another process's Do after the outage = %s, %v after %v, runs %d; want the owner's result at once, run once",
				got, err, time.Since(start), runs.Load())
		}
		a.mu.Lock()
		left, writing := len(a.unwritten), a.writing
		a.mu.Unlock()
		if left != 0 || writing {
			t.Errorf("after the write-back: %d outcomes kept, writing %v; want none, stopped", left, writing)
		}
	})
}

// TestWriteBackEndsAtExpiry: a store that never answers again costs one
// failed operation per Poll whatever the number of outcomes kept, and the
// write-back ends by itself when they expire (TTL after completion): the
// bubble ends with no goroutine left.
func TestWriteBackEndsAtExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newDownStore()
		r := newRunner(t, Config{Store: store, Poll: 100 * time.Millisecond, TTL: time.Second})
		start := make(chan struct{})
		var started, wg sync.WaitGroup
		for i := range 3 {
			started.Add(1)
			wg.Go(func() {
				r.Do(context.Background(), mustStep(t, "op", strconv.Itoa(i)), func(context.Context) ([]byte, error) {
					started.Done()
					<-start
					return []byte(`1`), nil
				})
			})
		}
		started.Wait()
		store.down.Store(true)
		close(start)
		wg.Wait()
		if n := store.failed.Load(); n != 3 {
			t.Fatalf("failed operations at completion = %d, want 3", n)
		}
		time.Sleep(time.Hour)
		// Tries at 0.1 ... 0.9 s; at 1 s the outcomes expire unwritten.
		if n := store.failed.Load() - 3; n != 9 {
			t.Errorf("failed write-backs of 3 outcomes with TTL 1s, Poll 100ms = %d, want 9", n)
		}
		r.mu.Lock()
		left, writing := len(r.unwritten), r.writing
		r.mu.Unlock()
		if left != 0 || writing {
			t.Errorf("after expiry: %d outcomes kept, writing %v; want none, stopped", left, writing)
		}
	})
}

// TestCloseEndsWriteBack: Close ends the write-back of an outcome the
// store does not take, at once, and later outcomes are not kept.
func TestCloseEndsWriteBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newDownStore()
		r := newRunner(t, Config{Store: store})
		down := func(context.Context) ([]byte, error) { store.down.Store(true); return []byte(`1`), nil }
		if _, err := r.Do(context.Background(), mustStep(t, "op", "1"), down); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := r.Close(); err != nil || time.Since(start) != 0 {
			t.Fatalf("Close = %v after %v, want nil at once", err, time.Since(start))
		}
		store.down.Store(false)
		if _, err := r.Do(context.Background(), mustStep(t, "op", "2"), down); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		writing := r.writing
		r.mu.Unlock()
		if writing {
			t.Error("write-back running after Close")
		}
		if err := r.Close(); err != nil {
			t.Errorf("second Close = %v, want nil", err)
		}
	})
}

// noUpdates is a MemoryStore whose updates all fail: every outcome is
// kept to write back.
type noUpdates struct{ *MemoryStore }

func (noUpdates) Update(context.Context, Key, Record, Record) (bool, error) { return false, errDown }

// TestUnwrittenBounded: a Runner keeps at most maxUnwritten outcomes to
// write back; beyond them an outcome is given up (its key reads Pending,
// then Unknown), never kept without bound.
func TestUnwrittenBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := NewMemoryStore(MemoryConfig{})
		r := newRunner(t, Config{Store: noUpdates{s}})
		defer r.Close()
		for i := range maxUnwritten + 10 {
			if _, err := r.Do(context.Background(), mustStep(t, "op", strconv.Itoa(i)), func(context.Context) ([]byte, error) { return []byte(`1`), nil }); err != nil {
				t.Fatal(err)
			}
		}
		r.mu.Lock()
		n := len(r.unwritten)
		r.mu.Unlock()
		if n != maxUnwritten {
			t.Errorf("outcomes kept after %d unrecorded = %d, want %d", maxUnwritten+10, n, maxUnwritten)
		}
	})
}
