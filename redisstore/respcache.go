package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/respcache"
)

// RespCache keeps a [respcache.Cache]'s answers in Redis: set
// respcache.Config.Store to it. Each answer is one string key, named by
// the request's key (a hash: no prompt text, no tenant id), holding the
// entry's JSON, that the server expires at the TTL; an entry above
// MaxCacheEntryBytes is not stored. Bound the cache's memory with a
// server of its own, with maxmemory and an LRU policy: on the server that
// holds effect records, limits, budgets or leases, eviction drops those
// too, undetected (see "Effect records and store loss"). A RespCache is
// safe for concurrent use.
type RespCache struct{ s *Store }

// MaxCacheEntryBytes is the largest entry, in bytes of JSON, a RespCache
// stores.
const MaxCacheEntryBytes = 1 << 20

// RespCache returns the [respcache.Store] of s.
func (s *Store) RespCache() *RespCache { return &RespCache{s: s} }

var _ respcache.Store = (*RespCache)(nil)

// Get implements [respcache.Store]: one GET. An entry that does not
// decode is a miss.
func (c *RespCache) Get(ctx context.Context, key string) (*respcache.Entry, error) {
	var b []byte
	err := c.s.do(ctx, func(ctx context.Context) error {
		var err error
		b, err = c.s.c.Get(ctx, c.s.key("rc", key)).Bytes()
		return err
	})
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var e respcache.Entry
	if json.Unmarshal(b, &e) != nil {
		return nil, nil
	}
	return &e, nil
}

// Set implements [respcache.Store]: one SET with the TTL (in
// milliseconds, at least one).
func (c *RespCache) Set(ctx context.Context, key string, e *respcache.Entry, ttl time.Duration) error {
	b, err := json.Marshal(e)
	if err != nil || len(b) > MaxCacheEntryBytes || ttl <= 0 {
		return err
	}
	return c.s.do(ctx, func(ctx context.Context) error {
		return c.s.c.Set(ctx, c.s.key("rc", key), b, max(ttl, time.Millisecond)).Err()
	})
}
