package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/fallback"
)

// Cooldowns is a [fallback.SharedCooldowns] kept in Redis, so that a route
// one instance saw announce a Retry-After cools down on every instance: set
// fallback.Config.Cooldowns (stack.Config.Fallback.Cooldowns) to it, and
// breaker.Config.Shared to share open breakers as well. Until reads a
// local copy, a [fallback.MemoryCooldowns]: no round trip, lock or
// allocation. Set raises the local copy at once and wakes a goroutine that
// writes the cooldown to Redis; every [Config.Refresh] the same goroutine
// reads the cooldowns all instances set into the local copy. Build it with
// [Store.Cooldowns]; Close stops the goroutine. A Cooldowns is safe for
// concurrent use.
type Cooldowns struct {
	s     *Store
	key   string
	local *fallback.MemoryCooldowns

	mu      sync.Mutex
	pending map[string]time.Time // set here, not yet written

	wake chan struct{} // cap 1: pending has something
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

var _ fallback.SharedCooldowns = (*Cooldowns)(nil) // a portico.Cooldowns too

// Cooldowns returns a new Cooldowns shared through s and starts its
// goroutine, which reads the shared cooldowns every [Config.Refresh],
// first one Refresh from now. Call Close when done with it.
func (s *Store) Cooldowns() *Cooldowns {
	local, _ := fallback.NewMemoryCooldowns(0)
	c := &Cooldowns{s: s, key: s.key("cd", ""), local: local, pending: make(map[string]time.Time),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// Until implements [portico.Cooldowns] from the local copy: the zero Time
// when key has no cooldown that has not ended.
func (c *Cooldowns) Until(key string) time.Time { return c.local.Until(key) }

// Set implements [portico.Cooldowns]: the local copy holds until at once,
// and the write to Redis follows in the background; a time already past
// changes nothing.
func (c *Cooldowns) Set(key string, until time.Time) {
	if !until.After(time.Now()) {
		return
	}
	c.local.Set(key, until)
	c.mu.Lock()
	c.hold(key, until)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// hold keeps until as key's pending write, the later of two, for at most
// fallback.DefaultCooldownKeys keys. c.mu is held.
func (c *Cooldowns) hold(key string, until time.Time) {
	if cur, ok := c.pending[key]; (ok || len(c.pending) < fallback.DefaultCooldownKeys) && until.After(cur) {
		c.pending[key] = until
	}
}

// Degraded implements [fallback.SharedCooldowns]: whether the Store is in
// an outage, so that Until answers from what this instance set and last
// read; one atomic load.
func (c *Cooldowns) Degraded() bool { return !c.s.Available() }

// Close writes the cooldowns not yet written (one operation, under
// [Config.Timeout]) and stops the goroutine. Until and Set keep working on
// the local copy. Close is safe to call more than once.
func (c *Cooldowns) Close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

func (c *Cooldowns) run() {
	defer close(c.done)
	tick := time.NewTicker(c.s.refresh)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			c.flush()
			return
		case <-c.wake:
			c.flush()
		case <-tick.C:
			c.flush() // what an outage kept from being written
			c.refresh()
		}
	}
}

// flush writes the pending cooldowns in one [setCooldowns] call. On a
// failure they stay pending (merged with any set meanwhile) for the next
// tick; those that ended are dropped.
func (c *Cooldowns) flush() {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	batch := c.pending
	c.pending = make(map[string]time.Time, len(batch))
	c.mu.Unlock()
	now := time.Now()
	args := make([]any, 1, 2+2*len(batch))
	args[0] = fallback.DefaultCooldownKeys
	for k, u := range batch {
		if d := u.Sub(now); d > 0 {
			args = append(args, k, ceilMillis(d))
		}
	}
	if len(args) == 1 {
		return
	}
	keys := []string{c.key, c.s.opKey("")}
	args = append(args, c.s.opTTL)
	_, err := run(context.Background(), c.s, (*redis.Cmd).Result, setCooldowns, keys, args...)
	if err == nil {
		return
	}
	c.mu.Lock()
	for k, u := range batch {
		if u.After(now) {
			c.hold(k, u)
		}
	}
	c.mu.Unlock()
}

// refresh reads every cooldown held in Redis, as time left by the server's
// clock, into the local copy as time left by this one's, counted from the
// reply's arrival: a cooldown learnt this way ends no earlier than where
// it was set, late by at most the write's and the read's transits and
// three roundings to the millisecond, whatever the clocks' offsets, as
// long as they hold: a forward step of the server's clock between the
// write and the read (an NTP or VM correction) makes the end early by
// the step. The local copy is on this instance's wall clock, which a
// step moves every end with.
func (c *Cooldowns) refresh() {
	v, err := run(context.Background(), c.s, (*redis.Cmd).Slice, getCooldowns, []string{c.key})
	if err != nil {
		return
	}
	now := time.Now()
	for i := 0; i+1 < len(v); i += 2 {
		k, ok := v[i].(string)
		ms, okMs := v[i+1].(int64)
		if ok && okMs && ms > 0 {
			c.local.Set(k, now.Add(time.Duration(ms)*time.Millisecond))
		}
	}
}

// ceilMillis converts d > 0 to whole milliseconds, rounding up so that a
// cooldown never ends early, capped at 2^43 (about 278 years), far within
// a Lua number's exact integers once added to the server's time.
func ceilMillis(d time.Duration) int64 {
	return min((int64(d)+int64(time.Millisecond)-1)/int64(time.Millisecond), 1<<43)
}

// The cooldown scripts. One sorted set holds every cooldown: the member is
// the key (a route's Quota or Name), the score its end in milliseconds of
// the server's clock. Instances send and receive only durations (time
// left), so their clocks' offsets to the server's never enter; a step of
// the server's clock between a write and a read does (see refresh). Members
// that ended are removed on every write; the set keeps at most
// fallback.DefaultCooldownKeys members (the first to end goes first) and
// expires with its last cooldown.
const cooldownLib = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local later = tonumber(t[1]) * 1000 + math.ceil(tonumber(t[2]) / 1000)
`

// setCooldowns: KEYS[1] the set, then the operation's record (see
// onceLib); ARGV the most members, then pairs of key and milliseconds left
// (> 0), then the record's TTL. Each key's end is raised to now + left,
// now rounded up to the millisecond, never lowered (ZADD GT); a resend
// raises nothing again. Returns the number of members.
var setCooldowns = redis.NewScript(cooldownLib + onceLib + `
return once(function()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
for i = 2, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], 'GT', string.format('%.0f', later + tonumber(ARGV[i + 1])), ARGV[i])
end
local n = redis.call('ZCARD', KEYS[1])
local most = tonumber(ARGV[1])
if n > most then
  redis.call('ZPOPMIN', KEYS[1], n - most)
  n = most
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', tonumber(last[2])))
return n
end)
`)

// getCooldowns: KEYS[1] the set. Returns, flat, each key whose cooldown has
// not ended and the milliseconds it has left (> 0).
var getCooldowns = redis.NewScript(cooldownLib + `
local v = redis.call('ZRANGE', KEYS[1], '(' .. string.format('%.0f', now), '+inf', 'BYSCORE', 'WITHSCORES')
for i = 2, #v, 2 do v[i] = tonumber(v[i]) - now end
return v
`)
