package portico

import "time"

// Cooldowns keeps, per key, the time until which what the key names is not
// called: a fallback group's routes, until a Retry-After one of them
// announced (keyed by [Capabilities].Quota or the route's name), and a
// breaker shared by several processes, until the end of its open
// interval ("breaker:" + its name). Package fallback's MemoryCooldowns is
// the in-process store; package redisstore's Cooldowns shares one over
// Redis.
//
// Implementations must be safe for concurrent use. Until must not block
// and should not allocate (it is asked for every candidate of every
// request, and on every call of a closed shared breaker): a store shared
// by several processes keeps a local copy that Until reads, and Set may
// write through in the background.
type Cooldowns interface {
	// Until returns when key's cooldown ends. A time not after now, or the
	// zero Time, means key has none.
	Until(key string) time.Time
	// Set extends key's cooldown to until; the later of until and the time
	// already held is kept, and a time already past changes nothing.
	Set(key string, until time.Time)
}
