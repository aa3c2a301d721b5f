package spend

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Account names what one call charges: the key's budgets, kept apart from
// other layers' by Name, for the windows At falls in.
type Account struct {
	// Name is the layer's Shared.Name: layers share budgets only when
	// their Names agree.
	Name string
	// Key is the budgets' key (a tenant, a tier, a key of the caller's
	// choosing).
	Key string
	// At is when the call was admitted: it is charged and settled in the
	// windows At falls in, whenever it ends.
	At time.Time
	// Limits are the key's budgets, at most one per Window.
	Limits []Limit
}

// Grant is a store's answer to a reservation.
type Grant struct {
	// Admitted says the cost was reserved in every window.
	Admitted bool
	// Over is the index in Account.Limits of the first budget found spent
	// when not Admitted.
	Over int
	// Remaining is the least, over the Limits, of the amount less what the
	// window had spent before this reservation (reservations included).
	Remaining float64
}

// Store keeps the spent amount of each (Name, Key, window). Implementations
// must be safe for concurrent use and apply each operation atomically over
// every window of the Account; [Memory] is the in-process one, package
// redisstore's SpendStore shares them across instances.
type Store interface {
	// Reserve admits the call when every window of a has spent less than
	// its Limit's Amount, adding cost to each; otherwise it adds nothing.
	Reserve(ctx context.Context, a *Account, cost float64) (Grant, error)
	// Settle adds delta (negative: a refund) to each window of a that is
	// still kept; a window that ended or was forgotten takes nothing.
	Settle(ctx context.Context, a *Account, delta float64) error
	// Spent returns what each window of a has spent, reservations
	// included, in the order of a.Limits.
	Spent(ctx context.Context, a *Account) ([]float64, error)
}

// Memory is the in-process [Store]: one entry per (Name, Key), a slot per
// Window holding the current window's number and its spent amount, so
// that a key's memory is fixed whatever its traffic. Entries whose every
// window has ended are dropped when the table has doubled since the last
// sweep. The zero Memory is ready to use; it is safe for concurrent use.
type Memory struct {
	mu      sync.Mutex
	m       map[memKey]*[numWindows]slot
	sweepAt int
}

type memKey struct{ name, key string }

// slot is one window's state: its number and what it spent, and when it
// ends, for the sweep.
type slot struct {
	id    int64
	end   time.Time
	spent float64
}

var _ Store = (*Memory)(nil)

// Reserve implements [Store.Reserve]. It never fails.
func (s *Memory) Reserve(_ context.Context, a *Account, cost float64) (Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(a)
	g := grant(e, a)
	if g.Admitted {
		for _, l := range a.Limits {
			e[l.Window].spent += cost
		}
	}
	return g, nil
}

// grant is what a's limits leave in e at a.At: admitted while every
// window has some left, else Over the first spent; Remaining the least
// left.
func grant(e *[numWindows]slot, a *Account) Grant {
	g := Grant{Admitted: true}
	for i, l := range a.Limits {
		left := l.Amount - current(e, l.Window, a.At).spent
		if i == 0 || left < g.Remaining {
			g.Remaining = left
		}
		if left <= 0 && g.Admitted {
			g.Admitted, g.Over = false, i
		}
	}
	return g
}

// Settle implements [Store.Settle]. It never fails.
func (s *Memory) Settle(_ context.Context, a *Account, delta float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[memKey{a.Name, a.Key}]
	if e == nil {
		return nil
	}
	for _, l := range a.Limits {
		if id, _ := l.Window.Of(a.At); e[l.Window].id == id {
			e[l.Window].spent = max(e[l.Window].spent+delta, 0)
		}
	}
	return nil
}

// Spent implements [Store.Spent]. It never fails.
func (s *Memory) Spent(_ context.Context, a *Account) ([]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]float64, len(a.Limits))
	if e := s.m[memKey{a.Name, a.Key}]; e != nil {
		for i, l := range a.Limits {
			if id, _ := l.Window.Of(a.At); e[l.Window].id == id {
				out[i] = e[l.Window].spent
			}
		}
	}
	return out, nil
}

// Len returns the number of keys the table holds.
func (s *Memory) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// entry returns a's entry, made (after a sweep, when the table doubled)
// if absent.
func (s *Memory) entry(a *Account) *[numWindows]slot {
	k := memKey{a.Name, a.Key}
	if e := s.m[k]; e != nil {
		return e
	}
	if s.m == nil {
		s.m = map[memKey]*[numWindows]slot{}
	}
	if len(s.m) >= max(2*s.sweepAt, 64) {
		s.sweep(a.At)
	}
	e := new([numWindows]slot)
	s.m[k] = e
	return e
}

// sweep drops the entries whose every window ended by now.
func (s *Memory) sweep(now time.Time) {
	for k, e := range s.m {
		if !slices.ContainsFunc(e[:], func(sl slot) bool { return sl.end.After(now) }) {
			delete(s.m, k)
		}
	}
	s.sweepAt = len(s.m)
}

// current returns e's slot for window w at t, reset when a new window began.
func current(e *[numWindows]slot, w Window, t time.Time) *slot {
	id, end := w.Of(t)
	if sl := &e[w]; sl.end.IsZero() || id > sl.id { // a call of an earlier window charges the current one
		*sl = slot{id: id, end: end}
	}
	return &e[w]
}
