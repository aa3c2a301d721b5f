package fallback

import (
	"errors"
	"maps"
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

// Cooldowns is the store of Config.Cooldowns, under its old name.
//
// Deprecated: use [portico.Cooldowns], the same interface.
type Cooldowns = portico.Cooldowns

// DefaultCooldownKeys is the bound of a [MemoryCooldowns] made with
// maxKeys 0.
const DefaultCooldownKeys = 1024

// MemoryCooldowns is the in-process [portico.Cooldowns]: a map from key to
// an atomic end time, copied when a key is added, so that Until takes no
// lock and does not allocate: a map lookup, and a clock read when the key
// is held. Set takes a lock; adding a key copies the map, dropping the
// cooldowns that have ended and, when MaxKeys are still held, the one that
// ends first. A MemoryCooldowns is safe for concurrent use.
type MemoryCooldowns struct {
	m   atomic.Pointer[map[string]*atomic.Int64] // nil until a key is set
	mu  sync.Mutex                               // serialises Set
	max int
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

// cell returns key's end time, in Unix nanoseconds, or nil.
func (c *MemoryCooldowns) cell(key string) *atomic.Int64 {
	if m := c.m.Load(); m != nil {
		return (*m)[key]
	}
	return nil
}

// Until implements [portico.Cooldowns]: the zero Time when key has no
// cooldown that has not ended.
func (c *MemoryCooldowns) Until(key string) time.Time {
	cl := c.cell(key)
	if cl == nil {
		return time.Time{}
	}
	if u := cl.Load(); u > time.Now().UnixNano() {
		return time.Unix(0, u)
	}
	return time.Time{}
}

// Set implements [portico.Cooldowns].
func (c *MemoryCooldowns) Set(key string, until time.Time) {
	u, now := unixNano(until), time.Now().UnixNano()
	if u <= now {
		return // already over: nothing to skip
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.cell(key); cl != nil {
		if cl.Load() < u {
			cl.Store(u)
		}
		return
	}
	next := c.kept(now)
	cl := new(atomic.Int64)
	cl.Store(u)
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

// lastNano is the latest time UnixNano represents (in 2262).
var lastNano = time.Unix(0, math.MaxInt64)

// kept returns a copy of the map without the cooldowns ended by now and,
// when MaxKeys are still held, without the one that ends first, to make
// room for one more. c.mu is held.
func (c *MemoryCooldowns) kept(now int64) map[string]*atomic.Int64 {
	next := make(map[string]*atomic.Int64)
	if old := c.m.Load(); old != nil {
		maps.Copy(next, *old)
	}
	maps.DeleteFunc(next, func(_ string, cl *atomic.Int64) bool { return cl.Load() <= now }) // ended
	if len(next) >= c.max {
		delete(next, endsFirst(next))
	}
	return next
}

// endsFirst returns the key of m whose cooldown ends first ("" when m is
// empty).
func endsFirst(m map[string]*atomic.Int64) string {
	first, end := "", int64(math.MaxInt64)
	for k, cl := range m {
		if u := cl.Load(); u <= end {
			first, end = k, u
		}
	}
	return first
}

// Len returns the number of keys held, ended cooldowns included until the
// next addition drops them.
func (c *MemoryCooldowns) Len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}
