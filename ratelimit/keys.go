package ratelimit

import (
	"hash/maphash"
	"maps"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// key identifies the buckets a call draws from: (client, model) by default,
// (Config.Key(req), "") with a key function. A comparable struct, so looking
// it up builds no string.
type key struct{ a, b string }

const (
	shardBits = 6
	numShards = 1 << shardBits
	minSweep  = 64 // entries per shard before the first sweep
)

// shard is one slice of the key table, picked by the key's hash: a map
// under a mutex, so that calls on keys of other shards take other locks.
type shard struct {
	mu      sync.Mutex
	m       map[key]*entry
	sweepAt int // sweep idle entries when len(m) reaches this
	peak    int // the most entries m held since it was made
}

// entry is the state of one key: its buckets, its in-flight count and its
// queue. mu guards every field. What only waiting calls use is behind
// waits.
type entry struct {
	mu       sync.Mutex
	inflight int     // slots taken
	tier     uint8   // immutable: the index of lim's tier in Limiter.limits, 0 for the default
	lim      *Limits // the limits in force, replaced by SetLimit and SetTierLimit
	tok      bucket  // tokens; valid when lim.Tokens > 0
	req      bucket  // requests; valid when lim.Requests > 0
	k        key     // immutable; a copy of the caller's strings
	*waits           // nil until a call waits or a program is remembered
}

// waits is the part of an entry that only waiting calls and programs use.
// The caller holds the entry's mu.
type waits struct {
	holds    []*hold       // calls waiting for the buckets, in line (Wait mode)
	wake     chan struct{} // closed to make the waiters plan again; see replanChan
	queue    []*waiter
	age      *time.Timer // dispatches at a waiter's next aging step; see Limiter.ageLater
	programs map[string]*program
	progAt   int // sweep programs when len(programs) reaches this
}

func newEntry(k key, lim *Limits, now time.Duration) *entry {
	e := &entry{lim: lim, k: key{strings.Clone(k.a), strings.Clone(k.b)}}
	e.setLimits(lim, now)
	return e
}

// w returns e's waits, made on first use. The caller holds e.mu.
func (e *entry) w() *waits {
	if e.waits == nil {
		e.waits = &waits{}
	}
	return e.waits
}

// queued and held return len(queue) and len(holds), 0 without waits. The
// caller holds e.mu.
func (e *entry) queued() int {
	if e.waits == nil {
		return 0
	}
	return len(e.queue)
}

// mustQueue reports whether a call goes through e's queue for a slot
// below lmax (0: no cap): the cap is reached, or calls wait already. The
// caller holds e.mu.
func (e *entry) mustQueue(lmax int) bool { return lmax > 0 && (e.inflight >= lmax || e.queued() > 0) }

func (e *entry) held() int {
	if e.waits == nil {
		return 0
	}
	return len(e.holds)
}

// setLimits installs lim at now, keeping what each bucket holds (capped at
// its new capacity).
func (e *entry) setLimits(lim *Limits, now time.Duration) {
	e.lim = lim
	e.tok.install(now, lim.tokenRate(), float64(lim.TokenBurst))
	e.req.install(now, lim.requestRate(), float64(lim.RequestBurst))
}

// idle reports whether e can be dropped: nothing in flight or queued, every
// bucket full, no provider view pending and no program remembered. Its state
// then equals a fresh entry's, so dropping it changes no decision.
func (e *entry) idle(now, ttl time.Duration) bool {
	if e.inflight > 0 || e.queued() > 0 || e.held() > 0 || !e.tok.full(now) || !e.req.full(now) {
		return false
	}
	e.sweepPrograms(now, ttl)
	return e.waits == nil || len(e.programs) == 0
}

// acquire returns k's entry locked, creating it with the limits of req's
// tier if needed. It locks the entry under the shard's lock, which a sweep
// holds too, so a sweep never drops an entry between lookup and lock.
func (l *Limiter) acquire(k key, req *portico.Request, now time.Duration) *entry {
	if e := l.lookup(k); e != nil {
		return e
	}
	tier := l.tierOf(req) // outside s.mu: Config.Tier is the caller's code
	s := l.shardOf(k)
	s.mu.Lock()
	e := s.m[k]
	if e == nil {
		e = l.insert(s, k, tier, now)
	}
	e.mu.Lock()
	s.mu.Unlock()
	return e
}

// lookup returns k's entry locked, nil when k has none.
func (l *Limiter) lookup(k key) *entry {
	s := l.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e != nil {
		e.mu.Lock()
	}
	return e
}

// shardOf returns k's shard.
func (l *Limiter) shardOf(k key) *shard {
	h := maphash.String(l.seed, k.a) ^ maphash.String(l.seed, k.b)
	return &l.shards[h&(numShards-1)]
}

// insert adds k's entry to s, with the limits of tier (read under s.mu, so
// that a SetLimit or SetTierLimit either finds it in s or made it with the
// new limits). Before adding, it sweeps s's idle entries when s has
// doubled since the last sweep, so the table holds at most about twice the
// keys that are not idle (plus minSweep per shard). The caller holds s.mu.
func (l *Limiter) insert(s *shard, k key, tier uint8, now time.Duration) *entry {
	if s.m == nil {
		s.m = make(map[key]*entry)
	}
	if len(s.m) >= max(s.sweepAt, minSweep) {
		l.sweep(s, now)
	}
	e := newEntry(k, l.limitsOf(tier), now)
	e.tier = tier
	s.m[e.k] = e // e.k, a copy: the caller's strings are not kept
	s.peak = max(s.peak, len(s.m))
	if !l.armed.Load() {
		l.arm()
	}
	return e
}

// sweep drops s's idle entries. The caller holds s.mu.
func (l *Limiter) sweep(s *shard, now time.Duration) {
	for ek, e := range s.m {
		e.mu.Lock()
		if e.idle(now, l.cfg.Queue.ProgramTTL) {
			delete(s.m, ek)
		}
		e.mu.Unlock()
	}
	s.sweepAt = 2 * len(s.m)
}

// The janitor: idle keys are evicted when a shard doubles (see insert),
// which bounds the table while keys keep arriving, and by a sweep of every
// shard that a timer runs once a janitor period while the table holds keys,
// which empties it once they all have gone idle: a million keys that called
// once leave nothing behind. The timer is armed by the first insert into an
// empty table and re-armed by its sweep while keys remain; it holds the
// Limiter by a weak pointer, so a Limiter dropped by its user is collected
// with its timer pending. No call on a live key does any of this work.
//
// minJanitorPeriod is the least janitor period: a sweep locks every entry,
// which a million keys make about 0.1 s of work, so it runs at most once a
// minute whatever the limits.
const minJanitorPeriod = time.Minute

// janitorPeriod is how often the janitor sweeps: the time an empty bucket of
// the limits in force (the slowest of every tier's) takes to refill (after
// which a key that used it is idle), and at least minJanitorPeriod. A key
// left idle is evicted within two periods of its last call, provider views
// and programs permitting.
func (l *Limiter) janitorPeriod() time.Duration {
	refill := 0.0 // seconds
	for _, lim := range l.allLimits() {
		if lim.Tokens > 0 {
			refill = max(refill, float64(lim.TokenBurst)/lim.tokenRate())
		}
		if lim.Requests > 0 {
			refill = max(refill, float64(lim.RequestBurst)/lim.requestRate())
		}
	}
	// At most a day: a later sweep is merely late, and the Duration
	// cannot overflow.
	return max(minJanitorPeriod, time.Duration(min(refill, 86400)*float64(time.Second)))
}

// arm starts the janitor's timer unless it is armed.
func (l *Limiter) arm() {
	if !l.armed.CompareAndSwap(false, true) {
		return
	}
	self := weak.Make(l)
	time.AfterFunc(l.janitorPeriod(), func() {
		if l := self.Value(); l != nil {
			l.janitor()
		}
	})
}

// janitor sweeps every shard's idle entries, shrinks the shards that
// emptied, and re-arms the timer while keys remain. It disarms before it
// counts the keys left: an insert either is counted, or finds the timer
// disarmed and arms it.
func (l *Limiter) janitor() {
	l.eachShard(func(s *shard) {
		if len(s.m) > 0 {
			l.sweep(s, mono.Now())
			l.shrink(s)
		}
	})
	l.armed.Store(false)
	if l.Keys() > 0 {
		l.arm()
	}
}

// shrink gives back the memory of s's evicted entries: a Go map keeps the
// room of its largest size, so one that fell below a quarter of its peak is
// copied into one of its size. The caller holds s.mu.
func (l *Limiter) shrink(s *shard) {
	switch n := len(s.m); {
	case n == 0:
		s.m, s.peak = nil, 0
	case 4*n < s.peak:
		m := make(map[key]*entry, n)
		maps.Copy(m, s.m)
		s.m, s.peak = m, n
	}
}

// Keys returns the number of keys whose state the Limiter holds now, idle
// ones not yet evicted included; with a [Store] (Config.Shared), those of
// its in-flight cap and local share, none of the store's. Safe for
// concurrent use; it locks every shard in turn, so call it for metrics, not
// per request.
func (l *Limiter) Keys() int {
	if s := l.shared; s != nil {
		n := 0
		for _, x := range []*Limiter{s.slots, s.local} {
			if x != nil {
				n += x.Keys()
			}
		}
		return n
	}
	n := 0
	l.eachShard(func(s *shard) { n += len(s.m) })
	return n
}

// eachShard runs f on each of l's shards in turn, locked.
func (l *Limiter) eachShard(f func(s *shard)) {
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		f(s)
		s.mu.Unlock()
	}
}
