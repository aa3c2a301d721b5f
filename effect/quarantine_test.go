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

// quarantineStore is a lossyStore that, after a loss, refuses claims to
// start runs of absent keys until its quarantine ends, as a Store that
// detects its own loss does.
type quarantineStore struct {
	*lossyStore
	mu    sync.Mutex
	until time.Time
}

func (q *quarantineStore) loseFor(d time.Duration) {
	q.lose()
	q.mu.Lock()
	q.until = time.Now().Add(d)
	q.mu.Unlock()
}

func (q *quarantineStore) PutIfAbsent(ctx context.Context, key Key, rec Record) (Record, bool, error) {
	q.mu.Lock()
	left := time.Until(q.until)
	q.mu.Unlock()
	if _, ok, _ := q.Get(ctx, key); !ok && left > 0 && rec.State == Pending && !rec.Renew {
		return Record{}, false, &portico.Error{Class: portico.Transient, RetryAfter: left, Err: ErrQuarantined}
	}
	return q.lossyStore.PutIfAbsent(ctx, key, rec)
}

// TestQuarantineRefusesNewRuns: during a store's quarantine after a loss, a
// caller that never saw a key is refused (Transient, NotSent, the store's
// RetryAfter, wrapping ErrQuarantined), nothing run or stored, and runs it
// once the quarantine is over; a caller that saw a key pending keeps
// waiting for its owner, whose beat (Renew) writes its claim back, and
// gets the owner's result: the effect runs once.
func TestQuarantineRefusesNewRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll, quarantine = 10 * time.Millisecond, 50 * time.Millisecond
		store := &quarantineStore{lossyStore: newLossyStore()}
		runner := func() *Runner {
			r, err := New(Config{Store: store, Poll: poll})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		a, b, c := runner(), runner(), runner()
		ctx := context.Background()
		var runs atomic.Int32
		release := make(chan struct{})
		charge := func(context.Context) ([]byte, error) { runs.Add(1); <-release; return []byte("charged"), nil }
		owner, waiter := make(chan error), make(chan error)
		go func() { _, err := a.Do(ctx, "k", charge); owner <- err }()
		synctest.Wait()
		go func() {
			res, err := b.Do(ctx, "k", charge)
			if err == nil && string(res) != "charged" {
				err = errors.New("result " + string(res))
			}
			waiter <- err
		}()
		time.Sleep(poll / 2) // b has seen the key pending
		store.loseFor(quarantine)

		var newRuns atomic.Int32
		step := func(context.Context) ([]byte, error) { newRuns.Add(1); return []byte("done"), nil }
		_, err := c.Do(ctx, "new", step)
		var pe *portico.Error
		if !errors.Is(err, ErrQuarantined) || !errors.As(err, &pe) || pe.Class != portico.Transient || !pe.NotSent || pe.RetryAfter != quarantine {
			t.Fatalf("a new step during the quarantine = %v; want Transient, NotSent, retry-after %v, ErrQuarantined", err, quarantine)
		}
		if _, ok, _ := c.Status(ctx, "new"); ok || newRuns.Load() != 0 {
			t.Fatalf("the refused step: stored %v, ran %d; want neither", ok, newRuns.Load())
		}
		time.Sleep(pe.RetryAfter)
		if res, err := c.Do(ctx, "new", step); err != nil || string(res) != "done" || newRuns.Load() != 1 {
			t.Fatalf("the new step after the quarantine = %q, %v, %d runs; want done, 1 run", res, err, newRuns.Load())
		}
		if rec, ok, _ := a.Status(ctx, "k"); !ok || rec.State != Pending {
			t.Fatalf("the owner's key after its beats = %+v, %v; want its claim, pending", rec, ok)
		}
		close(release)
		if err := <-owner; err != nil {
			t.Errorf("the owner's Do = %v, want nil", err)
		}
		if err := <-waiter; err != nil {
			t.Errorf("the waiter's Do = %v, want the owner's result", err)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("the owner's key ran %d times, want 1", n)
		}
	})
}

// cutStore is a Store view of one process that a test can cut off from
// the store: every operation then fails.
type cutStore struct {
	Store
	cut atomic.Bool
}

var errCut = errors.New("connection refused")

func (c *cutStore) Get(ctx context.Context, key Key) (Record, bool, error) {
	if c.cut.Load() {
		return Record{}, false, errCut
	}
	return c.Store.Get(ctx, key)
}

func (c *cutStore) PutIfAbsent(ctx context.Context, key Key, rec Record) (Record, bool, error) {
	if c.cut.Load() {
		return Record{}, false, errCut
	}
	return c.Store.PutIfAbsent(ctx, key, rec)
}

func (c *cutStore) Update(ctx context.Context, key Key, prev, next Record) (bool, error) {
	if c.cut.Load() {
		return false, errCut
	}
	return c.Store.Update(ctx, key, prev, next)
}

// TestOwnerCutOffThroughLoss: the owner of a run is cut off from the store
// while the store loses its records, for longer than the quarantine, so
// its beats cannot write its claim back and another caller runs the key
// after the quarantine. The owner, which can neither keep its claim nor
// record its outcome, returns its result with ErrUnknown: the two runs
// are never both reported as successes. Before this rule the owner was
// told ok, as was the second run.
func TestOwnerCutOffThroughLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll, quarantine = 10 * time.Millisecond, 50 * time.Millisecond
		shared := &quarantineStore{lossyStore: newLossyStore()}
		view := &cutStore{Store: shared}
		a, err := New(Config{Store: view, Poll: poll})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close() // the store never takes the owner's outcome
		b, err := New(Config{Store: shared, Poll: poll})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var runs atomic.Int32
		release := make(chan struct{})
		charge := func(context.Context) ([]byte, error) {
			if runs.Add(1) == 1 {
				<-release
			}
			return []byte("charged"), nil
		}
		type answer struct {
			res []byte
			err error
		}
		owner := make(chan answer)
		go func() { res, err := a.Do(ctx, "k", charge); owner <- answer{res, err} }()
		synctest.Wait()
		view.cut.Store(true)
		shared.loseFor(quarantine)
		time.Sleep(quarantine)
		if res, err := b.Do(ctx, "k", charge); err != nil || string(res) != "charged" {
			t.Fatalf("the second run = %q, %v; want charged", res, err)
		}
		close(release)
		got := <-owner
		if string(got.res) != "charged" || !errors.Is(got.err, ErrUnknown) || portico.ClassOf(got.err) != portico.Ambiguous {
			t.Errorf("the cut-off owner = %q, %v; want its result with an ambiguous ErrUnknown", got.res, got.err)
		}
		if n := runs.Load(); n != 2 {
			t.Errorf("runs = %d, want 2 (the owner could not keep its claim)", n)
		}
	})
}
