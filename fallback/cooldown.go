package fallback

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// SharedCooldowns is a [portico.Cooldowns] shared with other processes that can
// lose touch with them (package redisstore's, over Redis). Degraded reports
// whether Until answers from the local copy alone now, the shared store out
// of reach; it must be as cheap as Until. A [Group] reports each request it
// decides while Degraded holds as a [portico.EventSharedStore] event, reason
// "fallback:fail_open": its cooldowns are this process's only.
type SharedCooldowns interface {
	portico.Cooldowns
	Degraded() bool
}

// DefaultCooldownKeys is the bound of a [MemoryCooldowns] made with
// maxKeys 0.
const DefaultCooldownKeys = 1024

// MemoryCooldowns is the in-process [portico.Cooldowns]: a map from key to an atomic
// end time, copied when a key is added, so that Until takes no lock and does
// not allocate: a map lookup, and a clock read when the key has a
// cooldown (a Group reads one atomic count first, and nothing more while no
// cooldown is on). Set of a key already held is an atomic update; adding
// one copies the map, dropping the cooldowns that have ended and, when
// MaxKeys are still held, the one that ends first. A MemoryCooldowns is
// safe for concurrent use.
type MemoryCooldowns struct {
	m    atomic.Pointer[map[string]*atomic.Int64] // nil until a key is set
	live atomic.Int64                             // cells holding a time, ended or not: 0 when idle
	mu   sync.Mutex                               // serialises additions
	max  int
}

// NewMemoryCooldowns returns an empty store holding at most maxKeys keys;
// 0 means DefaultCooldownKeys (1,024). It returns an error starting with
// "fallback:" for a negative maxKeys.
func NewMemoryCooldowns(maxKeys int) (*MemoryCooldowns, error) {
	switch {
	case maxKeys < 0:
		return nil, errors.New("fallback: NewMemoryCooldowns: negative maxKeys")
	case maxKeys == 0:
		maxKeys = DefaultCooldownKeys
	}
	return &MemoryCooldowns{max: maxKeys}, nil
}

// A cell holds a cooldown's end in Unix nanoseconds: 0 for none, dead once
// dropped from the map (a Set that finds it dead adds the key anew, so no
// update is lost to a concurrent copy). live counts the cells holding a
// time: each move from 0 to a time adds one, each move from a time to 0 or
// dead takes one, by the goroutine whose compare-and-swap made it.
const dead = -1

func (c *MemoryCooldowns) cell(key string) *atomic.Int64 {
	if m := c.m.Load(); m != nil {
		return (*m)[key]
	}
	return nil
}

// Until implements [portico.Cooldowns]: the zero Time when key has no cooldown
// that has not ended.
func (c *MemoryCooldowns) Until(key string) time.Time {
	cl := c.cell(key)
	if cl == nil {
		return time.Time{}
	}
	u := cl.Load()
	if u <= 0 {
		return time.Time{}
	}
	if u <= time.Now().UnixNano() {
		if cl.CompareAndSwap(u, 0) { // ended: later reads need no clock
			c.live.Add(-1)
		}
		return time.Time{}
	}
	return time.Unix(0, u)
}

// Set implements [portico.Cooldowns].
func (c *MemoryCooldowns) Set(key string, until time.Time) {
	u := unixNano(until)
	if u <= time.Now().UnixNano() {
		return // already over: nothing to skip
	}
	if cl := c.cell(key); cl != nil && c.raise(cl, u) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.cell(key); cl != nil && c.raise(cl, u) {
		return
	}
	next := c.kept(time.Now().UnixNano())
	cl := new(atomic.Int64)
	cl.Store(u)
	c.live.Add(1)
	next[key] = cl
	c.m.Store(&next)
}

// unixNano returns t in Unix nanoseconds, the end of that range for a t
// past it.
func unixNano(t time.Time) int64 {
	if t.After(lastNano) {
		return math.MaxInt64
	}
	return t.UnixNano()
}

// kept returns a copy of the map without the cooldowns ended by now and,
// when MaxKeys are still held, without the one that ends first, to make
// room for one more. c.mu is held.
func (c *MemoryCooldowns) kept(now int64) map[string]*atomic.Int64 {
	next := make(map[string]*atomic.Int64)
	var first *atomic.Int64 // the live cooldown that ends first
	firstKey := ""
	if old := c.m.Load(); old != nil {
		for k, cl := range *old {
			if c.drop(cl, now) {
				continue
			}
			next[k] = cl
			if first == nil || cl.Load() < first.Load() {
				first, firstKey = cl, k
			}
		}
	}
	if len(next) >= c.max && first != nil {
		if first.Swap(dead) > 0 {
			c.live.Add(-1)
		}
		delete(next, firstKey)
	}
	return next
}

// drop marks cl dead when its cooldown ended by now, and reports whether it
// did.
func (c *MemoryCooldowns) drop(cl *atomic.Int64, now int64) bool {
	v := cl.Load()
	if v > now || !cl.CompareAndSwap(v, dead) {
		return false
	}
	if v > 0 {
		c.live.Add(-1)
	}
	return true
}

// lastNano is the latest time UnixNano represents (in 2262).
var lastNano = time.Unix(0, math.MaxInt64)

// Len returns the number of keys held, ended cooldowns included until the
// next addition drops them.
func (c *MemoryCooldowns) Len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}

// raise sets cl to u unless it holds a later time; false when cl is dead.
func (c *MemoryCooldowns) raise(cl *atomic.Int64, u int64) bool {
	for {
		v := cl.Load()
		switch {
		case v == dead:
			return false
		case v >= u:
			return true
		case cl.CompareAndSwap(v, u):
			if v == 0 {
				c.live.Add(1)
			}
			return true
		}
	}
}
