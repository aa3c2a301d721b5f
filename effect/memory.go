package effect

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"
)

// ErrFull is returned by [MemoryStore.PutIfAbsent] when the store holds
// MaxEntries unexpired records: a live record is never evicted, since
// forgetting a completed or unknown key would let its effect run twice.
var ErrFull = errors.New("effect: store full")

// DefaultMaxEntries is [MemoryConfig.MaxEntries]'s default.
const DefaultMaxEntries = 100_000

// MemoryConfig configures a [MemoryStore].
type MemoryConfig struct {
	// MaxEntries bounds the records kept. Zero means DefaultMaxEntries
	// (100,000); negative is an error.
	MaxEntries int
}

// sweepEvery is how often PutIfAbsent drops expired records even when the
// store is not full, so that memory follows the live records.
const sweepEvery = time.Minute

// MemoryStore is the in-process [Store]: a map under a mutex, with expiry.
// Expired records are dropped when read, when the store is full, and at most
// once a minute on insertion (a scan of the map, amortized over the
// insertions of that minute). It guarantees at-most-once within one process
// only. A MemoryStore is safe for concurrent use.
type MemoryStore struct {
	mu        sync.Mutex
	m         map[Key]Record
	max       int
	nextSweep time.Time
}

// NewMemoryStore returns an empty MemoryStore. It returns an error starting
// with "effect:" for a negative MaxEntries.
func NewMemoryStore(cfg MemoryConfig) (*MemoryStore, error) {
	if cfg.MaxEntries < 0 {
		return nil, errors.New("effect: MemoryConfig.MaxEntries is negative")
	}
	return &MemoryStore{m: make(map[Key]Record), max: cmp.Or(cfg.MaxEntries, DefaultMaxEntries)}, nil
}

// Len returns the number of records held, expired ones included until swept.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Get implements [Store]. It never fails.
func (s *MemoryStore) Get(_ context.Context, key Key) (Record, bool, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.live(key, now)
	return r, ok, nil
}

// PutIfAbsent implements [Store]. It fails with [ErrFull] when the store holds
// MaxEntries unexpired records.
func (s *MemoryStore) PutIfAbsent(_ context.Context, key Key, rec Record) (Record, bool, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.live(key, now); ok {
		if rec.State == Pending && r.sameClaim(rec) {
			s.m[key] = rec // the caller's own claim, resent
			return rec, true, nil
		}
		return r, false, nil
	}
	if s.full(now) {
		return Record{}, false, ErrFull
	}
	s.m[key] = rec
	return rec, true, nil
}

// Update implements [Store]. It never fails.
func (s *MemoryStore) Update(_ context.Context, key Key, prev, next Record) (bool, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.live(key, now)
	if !ok || !r.sameClaim(prev) {
		return false, nil
	}
	s.m[key] = next
	return true, nil
}

// live returns key's record unless absent or expired (then deleted).
func (s *MemoryStore) live(key Key, now time.Time) (Record, bool) {
	r, ok := s.m[key]
	if ok && !now.Before(r.Expires) {
		delete(s.m, key)
		return Record{}, false
	}
	return r, ok
}

// full reports whether the store holds MaxEntries unexpired records at
// now, sweeping the expired ones when it holds MaxEntries or a sweep is due.
func (s *MemoryStore) full(now time.Time) bool {
	if len(s.m) >= s.max || !now.Before(s.nextSweep) {
		s.sweep(now)
	}
	return len(s.m) >= s.max
}

func (s *MemoryStore) sweep(now time.Time) {
	for k, r := range s.m {
		if !now.Before(r.Expires) {
			delete(s.m, k)
		}
	}
	s.nextSweep = now.Add(sweepEvery)
}
