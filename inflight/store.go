package inflight

import (
	"context"
	"sync"
	"time"
)

// Lease is one call's slot: the key it counts against, kept apart from
// other layers' by Name, and its id, unique across instances.
type Lease struct {
	// Name is the layer's Shared.Name: layers share caps only when their
	// Names agree.
	Name string
	// Key is the capped key (a tenant).
	Key string
	// ID names the lease: unique across instances and calls.
	ID string
	// Max is the key's cap.
	Max int
	// TTL is how long the lease lives unless renewed.
	TTL time.Duration
}

// Store keeps the leases of each (Name, Key). Implementations must be
// safe for concurrent use, apply each operation atomically, and judge
// expiry by one clock; every operation is idempotent (a resent one
// changes nothing more). [Memory] is the in-process one, package
// redisstore's InFlight shares them across instances.
type Store interface {
	// Acquire drops the expired leases of l's key and, when fewer than
	// l.Max remain (or l.ID is among them), leases l.ID until now + l.TTL
	// and returns true; otherwise it changes nothing and returns false.
	Acquire(ctx context.Context, l *Lease) (bool, error)
	// Renew extends l.ID's lease to now + l.TTL and returns true, or
	// returns false when it has expired or was released.
	Renew(ctx context.Context, l *Lease) (bool, error)
	// Release ends l.ID's lease; releasing one that is gone does nothing.
	Release(ctx context.Context, l *Lease) error
}

// Memory is the in-process [Store], on this process's clock. The zero
// Memory is ready to use; it is safe for concurrent use. A key's entry is
// dropped when its last lease is released or found expired.
type Memory struct {
	mu sync.Mutex
	m  map[memKey]map[string]time.Time // lease id -> expiry
}

type memKey struct{ name, key string }

var _ Store = (*Memory)(nil)

// Acquire implements [Store].
func (m *Memory) Acquire(_ context.Context, l *Lease) (bool, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{l.Name, l.Key}
	ls := m.live(k, now)
	if _, held := ls[l.ID]; !held && len(ls) >= l.Max {
		return false, nil
	}
	if ls == nil {
		ls = m.add(k)
	}
	ls[l.ID] = now.Add(l.TTL)
	return true, nil
}

// add makes k's entry, empty. Called with mu held.
func (m *Memory) add(k memKey) map[string]time.Time {
	if m.m == nil {
		m.m = map[memKey]map[string]time.Time{}
	}
	ls := map[string]time.Time{}
	m.m[k] = ls
	return ls
}

// Renew implements [Store].
func (m *Memory) Renew(_ context.Context, l *Lease) (bool, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	ls := m.live(memKey{l.Name, l.Key}, now)
	if _, held := ls[l.ID]; !held {
		return false, nil
	}
	ls[l.ID] = now.Add(l.TTL)
	return true, nil
}

// Release implements [Store].
func (m *Memory) Release(_ context.Context, l *Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{l.Name, l.Key}
	ls := m.m[k]
	delete(ls, l.ID)
	if len(ls) == 0 {
		delete(m.m, k)
	}
	return nil
}

// InFlight returns how many live leases k's key holds now.
func (m *Memory) InFlight(name, key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live(memKey{name, key}, time.Now()))
}

// live returns k's leases after dropping those expired at now (nil when
// none is left, the entry dropped). Called with mu held.
func (m *Memory) live(k memKey, now time.Time) map[string]time.Time {
	ls := m.m[k]
	for id, exp := range ls {
		if !exp.After(now) {
			delete(ls, id)
		}
	}
	if len(ls) == 0 { // none left, or none at all
		delete(m.m, k)
		return nil
	}
	return ls
}
