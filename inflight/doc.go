// Package inflight caps each tenant's calls in flight across every
// instance of a service: a per-key cap shared through a store, beside
// package ratelimit's Limits.MaxInFlight, which caps one process's.
//
// # The rule
//
// [Caps.Wrap] admits a call when its key (a tenant: Identity.ClientKey by
// default) holds fewer than Config.Max live leases in the store, and takes
// one: a slot leased until now + Config.TTL. While the call runs (a long
// stream included) the lease is renewed every Config.Renew; when it ends,
// however it ends, the lease is released. A key at its cap is refused at
// once, nothing sent: a [portico.Rejected] *portico.Error, RefusedBy
// [portico.ClientLimit] (the tenant's own limit), wrapping [ErrFull].
//
// # Priorities
//
// Config.Reserve keeps slots free for higher priorities
// ([portico.Request].Priority): a Default call counts against Max less
// Reserve, a Sheddable call against Max less twice Reserve, a Critical
// call against Max (the one rule of every in-flight cap,
// [portico.Priority.Slots]). A tenant's batch work then never takes the
// slots its users' calls need (TestReserve). The store needs nothing
// more: each call's Lease.Max is its priority's cap.
//
// # The bound on a lost slot
//
// A lease lives until its expiry unless released: a slot whose release is
// lost (a crashed instance, a reply lost on the way, a store out of reach
// when the call ended) comes back at most TTL after its last renewal,
// that is at most TTL after the instance stopped: never later, since the
// store drops expired leases before it counts (a real redis-server:
// package redisstore's TestInFlightCrashedInstance, TestInFlightLostReplies).
// The cap holds while every instance reaches the store: a live call's
// lease is renewed Config.TTL/Renew times per TTL (three by default), so
// it expires only when every renewal of a whole TTL failed; such a call
// then runs on uncounted ([portico.EventSharedStore] "inflight:lease_lost")
// and the cap may be passed by one call per such lease. Expiry is judged
// by one clock, the store's (Redis's TIME), not the instances'.
//
// # Sharing
//
// Config.Shared.Store takes a [Store] shared by every instance (package
// redisstore's Store.InFlight: one script per acquire, per renewal and
// per release, each idempotent, so a reply lost and resent applies once); nil keeps the leases in a [Memory] of this
// process. While the shared store fails, with FailOpen each instance
// decides on its own Memory with Max/Instances slots (at least one);
// without, calls are refused (Rejected, RefusedBy ClientLimit, wrapping
// [ErrStore]). Either reports a [portico.EventSharedStore]
// ("inflight:fail_open", "inflight:fail_closed").
//
// Keys are the layer's Shared.Name and the tenant's key, length-prefixed:
// two tenants never share a lease set (redisstore escapes or hashes each
// key, see its Keys section).
//
// In package stack (stack.Config.InFlight) the cap sits below the client
// rate limiter and above the spend budgets and the routes.
package inflight
