package redisstore

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/inflight"
)

// InFlight keeps an [inflight.Caps]' leases in Redis: set
// inflight.Config.Shared.Store to it. Each (Name, Key) is one sorted set
// of lease ids scored by their expiry in the server's milliseconds
// (TIME), so every instance's leases expire on one clock; the set itself
// expires with its last lease. Acquire, Renew and Release are one script
// each, one round trip, and idempotent by lease id, so a resent script
// (go-redis retries a lost reply) changes nothing more. The set's key is
// the length-prefixed Name and the Key, escaped or hashed as every key
// of the Store (see Keys): two tenants never share one. An InFlight is
// safe for concurrent use.
type InFlight struct{ s *Store }

// InFlight returns the [inflight.Store] of s.
func (s *Store) InFlight() *InFlight { return &InFlight{s: s} }

var _ inflight.Store = (*InFlight)(nil)

// leaseKey returns the key of l's sorted set.
func (st *InFlight) leaseKey(l *inflight.Lease) string {
	return st.s.key("if", strconv.Itoa(len(l.Name))+":"+l.Name+l.Key)
}

// Acquire implements [inflight.Store] with [acquireScript].
func (st *InFlight) Acquire(ctx context.Context, l *inflight.Lease) (bool, error) {
	ok, err := run(ctx, st.s, (*redis.Cmd).Int64, acquireScript, []string{st.leaseKey(l)}, l.ID, l.Max, l.TTL.Milliseconds())
	return ok == 1, err
}

// Renew implements [inflight.Store] with [renewScript].
func (st *InFlight) Renew(ctx context.Context, l *inflight.Lease) (bool, error) {
	ok, err := run(ctx, st.s, (*redis.Cmd).Int64, renewScript, []string{st.leaseKey(l)}, l.ID, l.TTL.Milliseconds())
	return ok == 1, err
}

// Release implements [inflight.Store] with [releaseScript].
func (st *InFlight) Release(ctx context.Context, l *inflight.Lease) error {
	_, err := run(ctx, st.s, (*redis.Cmd).Result, releaseScript, []string{st.leaseKey(l)}, l.ID)
	return err
}

// Held returns how many live leases the (name, key) set holds now, on the
// server's clock, in one script (expired ones dropped).
func (st *InFlight) Held(ctx context.Context, name, key string) (int, error) {
	n, err := run(ctx, st.s, (*redis.Cmd).Int64, heldScript, []string{st.leaseKey(&inflight.Lease{Name: name, Key: key})})
	return int(n), err
}

// leaseNow is the scripts' prologue: now, the server's time in
// milliseconds, and the expired leases of KEYS[1] dropped.
const leaseNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
`

// leaseExpire sets KEYS[1] to expire with its last lease.
const leaseExpire = `
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], last[2]) end
`

// acquireScript: KEYS the lease set; ARGV the lease id, the cap, the TTL
// in milliseconds. Leases the id until now + TTL when it holds one
// already or fewer than the cap are live, returning 1; else 0.
var acquireScript = redis.NewScript(leaseNow + `
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
` + leaseExpire + `
return 1
`)

// renewScript: KEYS the lease set; ARGV the lease id, the TTL in
// milliseconds. Extends a live lease to now + TTL, returning 1; 0 when
// it expired or was released.
var renewScript = redis.NewScript(leaseNow + `
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
` + leaseExpire + `
return 1
`)

// releaseScript: KEYS the lease set; ARGV the lease id. Ends the lease.
var releaseScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
`)

// heldScript: KEYS the lease set. Returns the live leases.
var heldScript = redis.NewScript(leaseNow + `
return redis.call('ZCARD', KEYS[1])
`)
