package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
)

// Effects keeps [effect.Runner]'s execution records in Redis, so that a
// side effect runs at most once across every process sharing the server:
// set effect.Config.Store to it. A record is a hash that expires at the
// record's Expires (PEXPIREAT, rounded down to the millisecond, by the
// server's clock), so an expired record is absent and nothing outlives
// its TTL. An Effects is
// safe for concurrent use.
type Effects struct{ s *Store }

// Effects returns the [effect.Store] of s.
func (s *Store) Effects() *Effects { return &Effects{s: s} }

var _ effect.Store = (*Effects)(nil)

// record is a Record as stored in the hash's field d.
type record struct {
	State   effect.State  `json:"s"`
	Result  []byte        `json:"r,omitempty"`
	Class   portico.Class `json:"c,omitempty"`
	Reason  string        `json:"why,omitempty"`
	Owner   string        `json:"o"`
	Lease   int64         `json:"l,omitempty"` // unix ns
	Expires int64         `json:"e"`           // unix ns
}

func encode(r effect.Record) (string, error) {
	b, err := json.Marshal(record{State: r.State, Result: r.Result, Class: r.Class, Reason: r.Reason, Owner: r.Owner,
		Lease: unixNano(r.Lease), Expires: unixNano(r.Expires)})
	return string(b), err
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func decode(s string) (effect.Record, error) {
	var r record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return effect.Record{}, errors.New("redisstore: malformed effect record: " + err.Error())
	}
	rec := effect.Record{State: r.State, Result: r.Result, Class: r.Class, Reason: r.Reason, Owner: r.Owner, Expires: time.Unix(0, r.Expires)}
	if r.Lease != 0 {
		rec.Lease = time.Unix(0, r.Lease)
	}
	return rec, nil
}

// expiresAt returns t as whole unix milliseconds, rounded down, so that a
// record released with Expires now is gone at once; the zero time is long
// past.
func expiresAt(t time.Time) int64 {
	if t.IsZero() {
		return 1
	}
	return max(t.UnixMilli(), 1)
}

// Get implements [effect.Store].
func (e *Effects) Get(ctx context.Context, key effect.Key) (effect.Record, bool, error) {
	var v string
	err := e.s.do(ctx, func(ctx context.Context) error {
		var err error
		v, err = e.s.c.HGet(ctx, e.s.key("fx", string(key)), "d").Result()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return effect.Record{}, false, nil
	}
	if err != nil {
		return effect.Record{}, false, err
	}
	r, err := decode(v)
	return r, err == nil, err
}

// PutIfAbsent implements [effect.Store] with [putScript].
func (e *Effects) PutIfAbsent(ctx context.Context, key effect.Key, rec effect.Record) (effect.Record, bool, error) {
	d, err := encode(rec)
	if err != nil {
		return effect.Record{}, false, err
	}
	var v string
	err = e.s.do(ctx, func(ctx context.Context) error {
		var err error
		v, err = putScript.Run(ctx, e.s.c, []string{e.s.key("fx", string(key))},
			strconv.Itoa(int(rec.State)), rec.Owner, d, expiresAt(rec.Expires)).Text()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return rec, true, nil
	}
	if err != nil {
		return effect.Record{}, false, err
	}
	cur, err := decode(v)
	return cur, false, err
}

// Update implements [effect.Store] with [updateScript].
func (e *Effects) Update(ctx context.Context, key effect.Key, prev, next effect.Record) (bool, error) {
	d, err := encode(next)
	if err != nil {
		return false, err
	}
	var n int64
	err = e.s.do(ctx, func(ctx context.Context) error {
		var err error
		n, err = updateScript.Run(ctx, e.s.c, []string{e.s.key("fx", string(key))},
			strconv.Itoa(int(prev.State)), prev.Owner, strconv.Itoa(int(next.State)), next.Owner, d, expiresAt(next.Expires)).Int64()
		return err
	})
	return n == 1, err
}

// putScript: KEYS[1] the record's hash; ARGV the state, the owner, the
// encoded record, its expiry in unix milliseconds. Returns the stored
// encoded record when there is one, else stores this one and returns nil.
var putScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'd')
if cur then return cur end
redis.call('HSET', KEYS[1], 's', ARGV[1], 'o', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return false
`)

// updateScript: KEYS[1] the record's hash; ARGV the previous state and
// owner, the next state, owner, encoded record and expiry in unix
// milliseconds. Replaces the record only when its state and owner are the
// previous ones (compare-and-swap): returns 1 when it did, else 0.
var updateScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 'o')
if v[1] ~= ARGV[1] or v[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[3], 'o', ARGV[4], 'd', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
return 1
`)
