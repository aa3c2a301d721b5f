package stack

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
)

// Update replaces the stack's configuration with cfg at run time, without
// a restart and without failing a call: cfg is built and checked as [New]
// builds and checks one, then swapped in at once. A call that started
// before the swap finishes on the configuration it started with (routes
// removed included); a call after it sees only cfg. The old
// configuration's prober is stopped and cfg's started (unless Closed).
//
// A route of cfg with the Name of a route in force is that route, whatever
// its Model: each of its stateful layers, and each of the stack's shared
// ones, is kept with its state when its Config is the same (a limiter
// whose limits alone changed is kept, the new limits set on it); every
// other layer starts afresh, as in New. The package doc's "Live changes"
// says what is kept and how Configs are compared.
//
// Update is safe for concurrent use with every method; Updates are
// applied one at a time; a call pays one atomic load. On bad input it returns a *portico.Error of Class Permanent (Reason
// "invalid stack config") wrapping New's error, and the configuration in
// force is left as it was.
func (s *Stack) Update(cfg Config) error {
	c := s.ctl
	if c == nil {
		return &portico.Error{Class: portico.Permanent, Reason: "invalid stack config", Err: errNotNew}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := s.cur.Load()
	g, err := build(cfg, old)
	if err == nil {
		err = g.memo.apply()
	}
	if err != nil {
		return &portico.Error{Class: portico.Permanent, Reason: "invalid stack config", Err: err}
	}
	s.cur.Store(g)
	old.prober.close()
	if !c.closed {
		g.prober.start()
	}
	return nil
}

// control is what Update and Close share on the Stack New returns.
type control struct {
	mu     sync.Mutex
	closed bool // Close was called: no prober starts again
}

// now is the configuration in force: s's own fields while New or Update
// builds s, the swapped-in configuration's on the Stack New returned.
func (s *Stack) now() *Stack {
	if c := s.cur.Load(); c != nil {
		return c
	}
	return s
}

// memo is what one configuration built, layer by layer, with the Config
// each was built from, so that the next configuration keeps a layer whose
// Config is the same (remember).
type memo struct {
	prev, next map[string]layerMemo // the configuration's before, and its own
	limits     []limitChange        // limits to set on kept limiters (apply)
}

// layerMemo is one layer and the Config it was built from.
type layerMemo struct {
	cfg   any
	layer any
}

// limitChange is the new limits of a kept limiter.
type limitChange struct {
	l        *ratelimit.Limiter
	from, to ratelimit.Config
}

// newMemo returns the memo of a configuration built after prev's (nil: the
// first).
func newMemo(prev *Stack) *memo {
	m := &memo{next: make(map[string]layerMemo)}
	if prev != nil {
		m.prev = prev.memo.next
	}
	return m
}

// remember returns the layer the configuration before built under key
// when it was built from a Config the same as c, and records it as this
// configuration's; otherwise newLayer(c)'s. A limiter's Config that
// differs only in its limits keeps the limiter; its new limits wait for
// apply, once the whole configuration was built.
func remember[C, L any](m *memo, key string, c C, newLayer func(C) (L, error)) (L, error) {
	if k, ok := m.prev[key]; ok {
		if same(k.cfg, c) {
			m.next[key] = k
			return k.layer.(L), nil
		}
		if to, ok := any(c).(ratelimit.Config); ok && same(sansLimits(k.cfg.(ratelimit.Config)), sansLimits(to)) {
			if _, err := newLayer(c); err != nil { // checks c as New would
				var zero L
				return zero, err
			}
			m.limits = append(m.limits, limitChange{l: any(k.layer).(*ratelimit.Limiter), from: k.cfg.(ratelimit.Config), to: to})
			m.next[key] = layerMemo{cfg: c, layer: k.layer}
			return k.layer.(L), nil
		}
	}
	l, err := newLayer(c)
	if err == nil {
		m.next[key] = layerMemo{cfg: c, layer: l}
	}
	return l, err
}

// sansLimits is c without its limits: what must be the same for a
// limiter to be kept with new limits.
func sansLimits(c ratelimit.Config) ratelimit.Config {
	c.Limits = ratelimit.Limits{}
	if c.Tiers != nil {
		t := make(map[string]ratelimit.Limits, len(c.Tiers))
		for name := range c.Tiers {
			t[name] = ratelimit.Limits{}
		}
		c.Tiers = t
	}
	return c
}

// apply sets the new limits on the kept limiters; on an error it sets
// back those it set, and returns it.
func (m *memo) apply() error {
	for i, ch := range m.limits {
		if err := set(ch.l, ch.from, ch.to); err != nil {
			for _, done := range m.limits[:i] {
				_ = set(done.l, done.to, done.from)
			}
			return fmt.Errorf("stack: %w", err)
		}
	}
	m.limits = nil
	return nil
}

// set sets on l, whose limits are cur's, those of c that differ: the
// default limits, and each tier's.
func set(l *ratelimit.Limiter, cur, c ratelimit.Config) error {
	if c.Limits != cur.Limits {
		if err := l.SetLimit(c.Limits); err != nil {
			return err
		}
	}
	for name, lim := range c.Tiers {
		if lim != cur.Tiers[name] {
			if err := l.SetTierLimit(name, lim); err != nil {
				return err
			}
		}
	}
	return nil
}

// defaultCooldowns is the group's Cooldowns when Config.Fallback.Cooldowns
// is nil: one memory store per stack, kept by Update.
func defaultCooldowns(m *memo) portico.Cooldowns {
	return kept(m, "cooldowns", func() portico.Cooldowns {
		cd, _ := fallback.NewMemoryCooldowns(0) // the default size: no error
		return cd
	})
}

// kept is state of the stack's own under key (no Config builds it): the
// configuration before's, or newState's, kept by the next Update.
func kept[T any](m *memo, key string, newState func() T) T {
	v, _ := remember(m, key, struct{}{}, func(struct{}) (T, error) { return newState(), nil })
	return v
}

// same reports whether two Configs are the same for remember: values
// equal field by field, pointers, channels and unsafe pointers by
// identity, functions when both are nil or have the same code (a
// closure's captured values are not seen: the same literal is the same
// function, as are two method values of one method).
func same(a, b any) bool {
	return sameValue(reflect.ValueOf(a), reflect.ValueOf(b))
}

func sameValue(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() || a.Type() != b.Type() {
		return !a.IsValid() && !b.IsValid()
	}
	switch a.Kind() {
	case reflect.Func:
		return a.Pointer() == b.Pointer() // nil: 0
	case reflect.Interface:
		return sameValue(a.Elem(), b.Elem()) // nil: not valid
	case reflect.Struct:
		return sameFields(a, b)
	case reflect.Slice:
		return a.IsNil() == b.IsNil() && sameElems(a, b)
	case reflect.Array:
		return sameElems(a, b)
	case reflect.Map:
		return sameMap(a, b)
	}
	return a.Equal(b) // scalars by value; pointers and channels by identity
}

// sameFields reports whether the structs a and b, of one type, hold the
// same fields by sameValue.
func sameFields(a, b reflect.Value) bool {
	for i := range a.NumField() {
		if !sameValue(a.Field(i), b.Field(i)) {
			return false
		}
	}
	return true
}

// sameElems reports whether the slices or arrays a and b, of one type,
// hold the same elements by sameValue.
func sameElems(a, b reflect.Value) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i := range a.Len() {
		if !sameValue(a.Index(i), b.Index(i)) {
			return false
		}
	}
	return true
}

// sameMap reports whether the maps a and b, of one type, hold the same
// keys with the same values by sameValue.
func sameMap(a, b reflect.Value) bool {
	if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
		return false
	}
	for it := a.MapRange(); it.Next(); {
		if !sameValue(it.Value(), b.MapIndex(it.Key())) {
			return false
		}
	}
	return true
}

// errNotNew is Update's error on a Stack New did not make.
var errNotNew = errors.New("stack: Update on a Stack New did not return")
