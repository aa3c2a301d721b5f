package effect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// watchedStore is a quarantineStore that counts its losses, as a Store
// that detects its own loss does ([LossWatcher]).
type watchedStore struct {
	*quarantineStore
	losses atomic.Uint64
	asked  atomic.Int32 // calls of Losses
	left   atomic.Int32 // calls of Losses with Hold zero: the Runner left

	mu      sync.Mutex
	members []Member // every Member asked with
}

func newWatchedStore() *watchedStore {
	return &watchedStore{quarantineStore: &quarantineStore{lossyStore: newLossyStore()}}
}

func (w *watchedStore) Losses(_ context.Context, m Member) (uint64, error) {
	w.asked.Add(1)
	if m.Hold == 0 {
		w.left.Add(1)
	}
	w.mu.Lock()
	w.members = append(w.members, m)
	w.mu.Unlock()
	return w.losses.Load(), nil
}

// loseFor empties the store and quarantines absent keys for d.
func (w *watchedStore) loseFor(d time.Duration) {
	w.quarantineStore.loseFor(d)
	w.losses.Add(1)
}

func closing(t *testing.T, cfg Config) *Runner {
	t.Helper()
	r := newRunner(t, cfg)
	t.Cleanup(func() { r.Close() })
	return r
}

// TestCompletedStepWrittenBackAfterLoss: a step completed on instance A,
// then the store loses its records (a restart without persistence, a
// FLUSHALL). A sees the store's count of losses change at its next Poll
// and writes its outcome back; instance B, asking within the quarantine,
// is refused, and after it gets A's result: the step ran once. A itself,
// asked within the quarantine before its write-back, answers from the
// outcome it kept. Without the kept outcomes, B ran the step again after
// the quarantine.
func TestCompletedStepWrittenBackAfterLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll, quarantine = 10 * time.Millisecond, 50 * time.Millisecond
		store := newWatchedStore()
		cfg := Config{Store: store, Poll: poll}
		a, b := closing(t, cfg), closing(t, cfg)
		ctx := context.Background()
		key := mustStep(t, "op", "charge")
		var runs atomic.Int32
		charge := func(context.Context) ([]byte, error) { runs.Add(1); return []byte("charged"), nil }
		if res, err := a.DoArgs(ctx, key, []byte(`{"n":1}`), charge); err != nil || string(res) != "charged" {
			t.Fatalf("A's Do = %q, %v", res, err)
		}
		time.Sleep(poll + poll/2) // A has asked the store once: it knows its count of losses
		synctest.Wait()
		store.loseFor(quarantine)

		// A, within the quarantine, before its next Poll: from its kept outcome.
		if res, err := a.DoArgs(ctx, key, []byte(`{"n":1}`), mustNotRun(t)); err != nil || string(res) != "charged" {
			t.Fatalf("A's Do in the quarantine = %q, %v; want its kept result", res, err)
		}
		if res, err := a.DoArgs(ctx, key, []byte(`{"n":2}`), mustNotRun(t)); !errors.Is(err, ErrArgumentsDiffer) || string(res) != "charged" {
			t.Fatalf("A's Do in the quarantine with other arguments = %q, %v; want its kept result, ErrArgumentsDiffer", res, err)
		}
		// B, within the quarantine: refused, nothing run.
		_, err := b.Do(ctx, key, charge)
		if !errors.Is(err, ErrQuarantined) || runs.Load() != 1 {
			t.Fatalf("B's Do in the quarantine = %v after %d runs; want ErrQuarantined, 1 run", err, runs.Load())
		}
		time.Sleep(portico.RetryAfterOf(err))
		if res, err := b.Do(ctx, key, charge); err != nil || string(res) != "charged" || runs.Load() != 1 {
			t.Fatalf("B's Do after the quarantine = %q, %v after %d runs; want A's result, 1 run", res, err, runs.Load())
		}
		if rec, ok, _ := b.Status(ctx, key); !ok || rec.State != Completed || rec.Args == "" {
			t.Errorf("the record after the write-back = %+v, %v; want A's, completed with its arguments", rec, ok)
		}
	})
}

// TestUnknownWrittenBackAfterLoss: an Unknown outcome is kept too (the
// effect may have happened): after a loss it is written back, and the
// key is not run again.
func TestUnknownWrittenBackAfterLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll, quarantine = 10 * time.Millisecond, 50 * time.Millisecond
		store := newWatchedStore()
		cfg := Config{Store: store, Poll: poll}
		a, b := closing(t, cfg), closing(t, cfg)
		ctx := context.Background()
		timeout := func(context.Context) ([]byte, error) {
			return nil, &portico.Error{Class: portico.Ambiguous, Reason: "timeout"}
		}
		if _, err := a.Do(ctx, "k", timeout); !errors.Is(err, ErrUnknown) {
			t.Fatalf("A's Do = %v, want ErrUnknown", err)
		}
		time.Sleep(2 * poll)
		store.loseFor(quarantine)
		time.Sleep(quarantine)
		if _, err := b.Do(ctx, "k", mustNotRun(t)); !errors.Is(err, ErrUnknown) {
			t.Fatalf("B's Do after the loss = %v, want ErrUnknown", err)
		}
	})
}

// TestKeptOutcomesBounded: a Runner keeps at most Config.Keep outcomes,
// the oldest dropped first, and MaxKeptBytes in all; outcomes that say the
// effect did not happen are not kept; a Runner over a store that cannot
// tell a loss keeps none.
func TestKeptOutcomesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newWatchedStore()
		r := closing(t, Config{Store: store, Keep: 3})
		ctx := context.Background()
		for i := range 5 {
			if _, err := r.Do(ctx, Key("k"+strconv.Itoa(i)), func(context.Context) ([]byte, error) { return []byte("x"), nil }); err != nil {
				t.Fatal(err)
			}
		}
		r.Do(ctx, "failed", func(context.Context) ([]byte, error) { return nil, errors.New("no") })
		r.mu.Lock()
		var keys []string
		for e := r.kept.order.Front(); e != nil; e = e.Next() {
			keys = append(keys, string(e.Value.(*kept).key))
		}
		r.mu.Unlock()
		if got := strings.Join(keys, ","); got != "k2,k3,k4" {
			t.Errorf("kept = %s, want k2,k3,k4", got)
		}

		big := closing(t, Config{Store: store})
		result := make([]byte, 1<<20)
		for i := range 5 {
			big.Do(ctx, Key("b"+strconv.Itoa(i)), func(context.Context) ([]byte, error) { return result, nil })
		}
		big.mu.Lock()
		n, bytes := big.kept.order.Len(), big.kept.bytes
		big.mu.Unlock()
		if n != 3 || bytes > MaxKeptBytes {
			t.Errorf("kept %d outcomes of 1 MiB, %d bytes; want 3, at most %d", n, bytes, MaxKeptBytes)
		}

		plain := closing(t, Config{})
		plain.Do(ctx, "k", func(context.Context) ([]byte, error) { return []byte("x"), nil })
		if plain.kept.order.Len() != 0 || plain.writing {
			t.Errorf("over a MemoryStore: kept %d, writing %v; want none", plain.kept.order.Len(), plain.writing)
		}
	})
}

// TestWatchEndsAtExpiry: the store is asked for its losses at once and
// once per Poll while outcomes are kept, then once to leave (Hold zero),
// and no more once they expired: the loop ends by itself.
func TestWatchEndsAtExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newWatchedStore()
		r := newRunner(t, Config{Store: store, Poll: 100 * time.Millisecond, TTL: time.Second})
		r.Do(context.Background(), "k", func(context.Context) ([]byte, error) { return []byte("x"), nil })
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n, left := store.asked.Load(), store.left.Load(); n != 11 || left != 1 {
			t.Errorf("the store was asked for its losses %d times, %d to leave; want 11 (at once, 9 Polls over the TTL, 1 to leave), 1", n, left)
		}
		r.mu.Lock()
		writing := r.writing
		r.mu.Unlock()
		if writing {
			t.Errorf("writing after the outcome expired; want the loop ended")
		}
	})
}

// TestMemberWrittenAfterWriteBack: a Runner asks the store at once when
// it keeps an outcome, then every Poll, with its Hold; its Member says it
// has written back a loss (Written 1) only once the write-back succeeded:
// not after one whose store operation failed (its reply lost); it leaves
// (Hold zero) when closed.
func TestMemberWrittenAfterWriteBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll = 10 * time.Millisecond
		store := newWatchedStore()
		r := newRunner(t, Config{Store: store, Poll: poll, Hold: 2 * time.Second})
		r.Do(context.Background(), "k", func(context.Context) ([]byte, error) { return []byte("x"), nil })
		time.Sleep(poll / 2)
		store.loseFor(time.Second)
		store.lostPut.Store(1) // the first write-back applies, its reply lost
		time.Sleep(3 * poll)
		synctest.Wait()
		r.Close()
		store.mu.Lock()
		defer store.mu.Unlock()
		var written []uint64
		for _, m := range store.members[:len(store.members)-1] {
			written = append(written, m.Written)
			if m.ID != r.id || m.Hold != 2*time.Second {
				t.Errorf("Member = %+v, want the Runner's ID and Hold 2s", m)
			}
		}
		if got := fmt.Sprint(written); got != "[0 0 0 1]" {
			t.Errorf("Written at once and each Poll = %s, want [0 0 0 1] (written back at the second try)", got)
		}
		if last := store.members[len(store.members)-1]; last.Hold != 0 || last.Written != 1 {
			t.Errorf("Member on Close = %+v, want Hold 0 (leaving), Written 1", last)
		}
	})
}
