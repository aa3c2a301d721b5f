// Package redisstore keeps Portico's shared state in Redis, so that limits,
// retry budgets, cooldowns and execution keys hold across every instance
// of a service: ten instances with a retry budget of 20 make 20 retries
// between them, not 200, a route that answered one instance 429 with
// Retry-After is left alone by all, and a side effect runs once whichever
// instance asks. It is a module of its own (it requires
// github.com/redis/go-redis/v9); no core package imports it. Each type
// implements an interface of a core
// package, set in that package's Config, whose nil value keeps the state in
// the process (the default, with its in-memory code path unchanged):
//
//	s, err := redisstore.New(redisstore.Config{Client: redis.NewClient(&redis.Options{
//		Addr: "redis:6379", ContextTimeoutEnabled: true})})
//	lim, err := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Requests: 500, Tokens: 200_000},
//		DefaultMaxTokens: 1024, Key: ratelimit.ByModel,
//		Shared: ratelimit.Shared{Store: s.Buckets(), FailOpen: true, Instances: 10}})
//	rt, err := retry.New(retry.Config{Budget: retry.Budget{Shared: retry.Shared{Store: s.Budgets()}}})
//	run, err := effect.New(effect.Config{Store: s.Effects()}) // defer run.Close()
//	cool := s.Cooldowns() // defer cool.Close()
//	st, err := stack.New(stack.Config{Routes: routes, Fallback: fallback.Config{Cooldowns: cool}})
//
// [Buckets] is a [ratelimit.Store]: a Limiter's request and token buckets
// with reserve (N_in + N_max), settle and refund, and the provider's
// rate-limit headers (x-ratelimit-*, anthropic-ratelimit-*) seen by one
// instance tightening the key for all. [Budgets] is a [retry.BudgetStore]:
// the per-client and per-destination retry budgets, both needed for a
// retry. [Effects] is an [effect.Store]: execution records (pending,
// completed, failed, unknown) with their expiry. [Cooldowns] is a
// [fallback.SharedCooldowns]: when each route (or each Quota) may be called
// again after a Retry-After, and, as a [portico.Cooldowns], when each shared
// breaker's open interval ends.
// [SpendStore] is a [spend.Store]: each tenant's spend in each budget
// window, reserved in all of them by one script. [RespCache] is a
// [respcache.Store]: cached answers under their hashed keys.
//
// # Scripts and time
//
// The scripts need Redis 7.0 or later (or Valkey): they write operation
// records with SET ... NX GET and set TTLs with PEXPIRE ... NX, options
// 7.0 added. On an older server every script fails, which the Store takes
// as a refusal of its configuration, and each layer then decides without
// it (failing open or closed as configured).
//
// Every decision is one Lua script run with EVALSHA (go-redis loads it on
// the first NOSCRIPT), so it is atomic on the server, and every time a
// bucket uses is the server's (TIME inside the script), never a client's:
// instances with skewed clocks share one bucket correctly. Contracts, the
// arguments in order:
//
//   - take (KEYS: the bucket hash; ARGV: one argument packing token rate
//     per second, token burst, request rate, request burst, cost): refill
//     both buckets to now, at the provider's slower rate while its view
//     holds; if the token bucket holds cost and the request bucket one
//     request, take both and return {0, 0}; else take nothing and return
//     {wait in microseconds, 1 (tokens) or 2 (requests)}, the least wait
//     after which the same take succeeds.
//   - settle (KEYS: one bucket hash per settle; ARGV: one argument packing,
//     for each, the four limits, tokens back (> 0) or charged (< 0), the
//     charge's floor, the longest hold, then for tokens and for requests:
//     known, remaining, limit, reset, then the requests back): the
//     settles in order; a refund
//     never lifts a level above its burst; a charge goes no lower than
//     minus one period's quota; a provider view lowers the level to what
//     remains and slows the refill to (limit - remaining) / reset until
//     the reset (the hold at most), as ratelimit's own buckets do.
//   - admit (KEYS: the takes' hashes, then the client's and the
//     destination's retry budget, then the carried settles' hashes; ARGV:
//     one argument packing the number of takes, each take's five numbers,
//     then the number of budget keys and the deposit's four numbers and
//     TTL, then the number of settles and each one's sixteen numbers): a
//     request's admission (see One round trip per request): the settles
//     as settle applies them, then each take in order, stopping at the
//     first that refuses ({i, wait, which}: the i-th refused, the earlier
//     stay charged), then the deposit ({0, 0, 0}).
//   - deposit (KEYS: client bucket, destination bucket; ARGV: each one's
//     deposit and capacity in billionths of a retry, the TTL): raise each
//     level by its deposit, capped at its capacity.
//   - spend (KEYS as deposit; ARGV: the capacities, the TTL): take one
//     retry from each bucket, or none, and say which had less than one,
//     the destination's first.
//   - get, put and update (KEYS: the record's hash, the epoch's hash;
//     ARGV: the epoch this instance saw last, then the record's): check
//     the epoch (see Effect records and store loss); read a record; store
//     a record unless one is there (returning it, unless it is the same
//     claim token's Pending claim, resent: replaced), or refuse a claim
//     when the key may have been lost; replace a record only when its
//     owner and state are the expected ones (compare-and-swap).
//   - set cooldowns (KEYS: the cooldown set; ARGV: the most members, then
//     pairs of key and milliseconds left): raise each key's end to the
//     server's now plus what is left (ZADD GT: never lowered), drop the
//     ended ones and, beyond the bound, those that end first; the set
//     expires with its last end (PEXPIREAT).
//   - get cooldowns (KEYS: the cooldown set): each key whose end is ahead,
//     with the milliseconds it has left.
//
// Take, settle, deposit, spend and set cooldowns also take, last, their
// operation's record among KEYS and its TTL among ARGV (see the next
// section).
//
// Levels are kept as whole millionths of a token, written as integers
// (rounded down: a write makes a key at most a millionth of a token
// stricter), and numbers reach a script packed as little-endian float64s
// in one argument (struct.unpack reads them): no float is formatted or
// parsed as text on either side (but a provider view's rate, when it
// changes). A request bucket is a token bucket of
// cost 1. The two buckets of a key are read with one HMGET and written
// with one HSET of the fields that changed (a provider's view only when
// it began, changed or ended). The
// token bucket's bound, net admitted cost at most b + r*dt over any
// interval, holds across instances (TestBucketBoundTenInstances checks it
// over every interval of ten Limiters racing on one key).
//
// # One round trip per request
//
// Before a request is sent, the preset (package stack) would ask the store
// three times, one layer after the other: the client limiter's take, the
// first route's limiter's take, the route's retry deposit. When those
// layers' stores are one Store on one server, the stack asks them in one
// script instead ([Store.Admit], the admit script above; the plan's shape
// is the internal package admit's, the one place that knows it), and each
// layer finds its step done in the request's context and skips its call:
// one round trip where there were three, and the same decisions, in the
// same order, as each layer makes alone (a refusal of the client's bucket
// charges neither; one of the route's leaves the client's charged, as the
// layer above would have been). A later route of a fallback group, a
// hedge, a call that waits for admission (ratelimit.Wait) ask their own
// take when they come to it; a take the plan charged for a route the
// request never reached (the group skipped it) is given back whole after
// the call, its tokens and its request ([Buckets.Return];
// TestPresetUnclaimedRefunded). On a Cluster or a Ring a
// request's keys live in several slots, which one script cannot touch:
// each layer then asks its own, as before (TestPresetOneRoundTrip).
//
// # Settles and their delay
//
// A settle (a refund of what a call did not use, a surcharge beyond it, a
// provider's view) is never sent on the caller's path: [Buckets.Settle]
// queues it and returns. The next admission of the Store ([Store.Admit])
// carries up to 16 settles of the queue in its own script, applied before
// its takes, so that under traffic a request's settles cost no round trip
// of their own and, on the keys the admission takes too, no read or write
// of their own either (one HMGET and one HSET per key and script). A
// settle is sent by one goroutine per Store (on a Store that has run an
// admission, once it waited 2 ms for one to carry it), started when the
// queue fills and ended when it empties, in
// scripts of up to 64 settles (one per script on a Cluster or a Ring,
// which has no admission script), each bounded by [Config.Timeout]. The
// queue holds at most 1,024 settles; beyond, and after [Store.Close], a
// settle is sent by its caller, as before. So a settle is applied within
// 2 ms plus ceil(q/64) + 1 operations of being queued, q the settles
// ahead of it (one Timeout each at most, a round trip each on a healthy
// server), or lost with its script when the store fails it (an admission
// carries none during an outage). [Store.Close] sends what is queued and
// returns when the queue is empty.
//
// Why the bound survives: settles commute (a refund is a sum capped at
// the burst, a surcharge a sum floored at minus a period's quota, a view
// a minimum), and package ratelimit's proof (The bound with refunds) takes
// every event on the bucket at the time the server applies it, whatever
// the call it belongs to. A settle that arrives late is a refund or a
// surcharge at a later time: the proof holds as it is, over the events the
// server applied, b + r*dt across instances. A settle that never arrives
// (its instance crashed with it queued, or the store failed its script)
// is a refund lost, which only makes the key stricter, or a surcharge
// lost, which makes the key looser by that surcharge: the allowance is
// the surcharges an instance had queued when it crashed, at most 1,024
// settles' each, and each at most a period's quota (the floor), in
// practice the few queued in the last round trip. Against the calls
// themselves (each call's net use counted when it was admitted), a delayed
// refund is credited in a later interval than its call: the excess there
// is at most the refunds in flight at the interval's start, a settle's
// delay's worth of calls. TestSettlesLateOrNever runs ten instances on a
// real server through each fault of this package's tests (a stop, a kill,
// a pause, replies later than Timeout, lost replies) with one instance
// crashing with its queue unsent, once with Limiters alone and once
// through the preset, whose admissions carry the settles: over every
// interval the events the
// server applied stay within b + r*dt (plus b after the kill, whose
// server restarted full), and it reports the refunds and surcharges lost.
//
// # Each command applies once
//
// A client resends a command whose reply it lost (go-redis does, up to
// MaxRetries times, 3 by default, when a connection drops under way), and
// the server may have run it already: a refund would be credited twice, a
// call charged twice, a retry token taken twice. So every script of
// [Buckets], [Budgets] and [Cooldowns] applies once per operation, however
// often it is sent. Each operation (one Take, Settle, Deposit, Spend or
// write of cooldowns) draws an id once, unique across instances (a random
// base per [Store] and a counter), and sends it as its last key, a record
// in the slot of the keys it updates (portico:op:{k=...}:<id>), with the
// record's TTL as its last argument. The script looks for the record
// first: found, it returns the reply the record holds and changes nothing;
// absent, it applies the operation and writes the record, in the same
// atomic run. A record lives [Config.Timeout] plus one second (a resend is
// sent within the Timeout, and may wait behind a stalled server), so the
// records held are the operations of that span: 1,050 short strings per
// thousand operations per second with the defaults.
//
// TestLostReplyAppliesOnce drops the reply of each script after the server
// ran it (redistest's Proxy) under go-redis's default retries: a take of 5
// charges 5, a refund of 5 credits 5, a spend takes one token, a deposit
// credits once (before this rule: 10, 10, two, twice). Under connections
// cut every 50 ms and every 5 ms, ten instances keep the bound above
// (TestBucketBoundKilledConnections). A reply that never comes is still a
// failed operation: the layer applies its failure mode, and what the
// script did stays done (a take charged for a call then refused, which
// only makes the key stricter).
//
// # Keys and their TTLs
//
// Every key starts with [Config.Prefix] ("portico:") and carries a hash
// tag, {k=...}, so that every key one script touches hashes to one slot:
// the same code runs on one server, on Redis Cluster and on Valkey. (The
// "k=" keeps the tag from being empty, which would hash the whole key.)
//
//	portico:rl:{k=<key>}                      hash    a Limiter key's two buckets
//	portico:rb:{k=<destination>}:c:<client>   string  a client's retry budget
//	portico:rb:{k=<destination>}:d            string  the destination's retry budget
//	portico:fx:{k=<execution key>}            hash    an execution record
//	portico:fx:epoch                          hash    the effect records' epoch (one server)
//	portico:fx:epoch:{e<n>}                   hash    the epoch of one hash slot's records (a Cluster)
//	portico:cd:{k=}                           zset    every cooldown: key -> end (ms, server clock)
//	portico:sp:{k=<len>:<name><key>}:<w><n>  string  a spend budget's window (w: mi, ho, da, mo; n its number)
//	portico:rc:{k=<sha-256 of the request>}   string  a cached answer (JSON)
//	portico:if:{k=<len>:<name><key>}          zset    a tenant's in-flight leases: id -> expiry (ms, server clock)
//	portico:op:{k=<as the keys>}:<id>         string  an operation's record (see above)
//
// Every part in angle brackets comes from users (tenant ids, destinations,
// route and model names, execution keys) and is encoded by one rule, so
// that no two distinct tuples share a key and no tenant ends a hash tag
// early to put its keys in another tuple's slot: bytes outside [A-Za-z0-9] and "-._:/|@+=" become %XX ('%'
// and both braces included, so a part never ends a tag), and a part whose
// encoding would pass 96 bytes becomes '#' and the base64url SHA-256 of its
// bytes (an encoded part never starts with '#'). Short ids stay readable;
// a key is at most 202 bytes beyond the Prefix whatever the ids (a 1 MB
// tenant id included: TestKeyLengthBounded), and 200 tenants named "a}0"
// to "a}199" land in 200 slots (TestTenantsCannotChooseTheirSlot). A slot
// is still the CRC16 of the encoded id, as Redis Cluster hashes any tag:
// where tenants choose their own ids, one who searches for ids of one
// slot (about 16,000 tries each) can still crowd it; give such tenants
// ids of your own (a hash of theirs) if that matters. Ids in
// keys are not secret: use a credential's hash as a client key, never the
// credential.
//
// The Limiter key is what package ratelimit gives: the limiter's
// Shared.Name, length-prefixed, then "=" and Config.Key's string, or by
// default the client key and the model ("<len>:<client>/<model>"), so
// that no two (name, key) tuples meet. Nothing grows without bound: a
// bucket hash expires when both of its buckets would be full again and no
// provider view holds, plus one to two seconds (a second of slack spares
// the next second's writes a PEXPIRE), so an absent key is a full bucket
// and an expired one changes no decision; a retry budget key is deleted
// when it fills up and otherwise expires after [Config.BudgetTTL] (10
// minutes) without deposits or retries, coming back full (as an in-memory
// budget evicted as idle does); an execution record expires at its
// Expires (rounded down to the millisecond), which the Runner sets to its
// TTL; an operation's record expires after Timeout plus a second; the
// cooldown set holds at most fallback.DefaultCooldownKeys (1,024) keys, a
// cooldown leaves it once ended, and the set expires at its last end. A
// cooldown's key is a route's Quota or Name, or "breaker:" + the breaker's
// Name: names the service configures, kept as they are (members of the
// set, not keys). A spend window's key expires a minute
// after its window ends, a cached answer at its TTL, a lease set with its
// last lease (a lease at its expiry, on the server's clock).
//
// # Cooldowns: a local copy, its staleness, and the clocks
//
// A fallback group asks its Cooldowns about every candidate of every
// request, so [Cooldowns.Until] never leaves the process: it reads a
// [fallback.MemoryCooldowns], without a round trip, a lock or an
// allocation. [Cooldowns.Set] raises that copy at once (this instance
// skips the route from the next request) and wakes the Cooldowns'
// goroutine, which writes every pending cooldown in one script; the same
// goroutine reads the whole set every [Config.Refresh] (100 ms) into the
// copy. Another instance therefore learns a cooldown at most Refresh plus
// three operations after the Set (one under way, the write, its read),
// each bounded by [Config.Timeout]: 250 ms with the defaults, on a healthy
// loopback server about Refresh (TestCooldownsTenInstances measures it
// over ten instances and asserts the bound). Until then it may still call
// the cooling route, and on a 429 learns the cooldown itself.
//
// Only durations cross the wire: Set sends the time left by its clock, the
// script adds it to the server's TIME, and a read returns the time left
// by the server's clock, which the reader adds to its own at the reply's
// arrival. The instances' clock offsets, to the server or to each other,
// never enter; a cooldown learnt from Redis ends up to a round trip (and a
// millisecond of rounding up) late, never early. Pub/sub would shorten the
// staleness to a round trip but loses what is published during a
// reconnection and tells an instance that starts nothing: the periodic
// read also serves those.
//
// # Failure modes
//
// Every operation runs under [Config.Timeout] (50 ms), or the caller's
// deadline when it comes first: a server stopped, paused or slow never
// holds a call longer. An operation the server did not answer (see
// below) starts an outage: for [Config.Probe] (1 s) every operation fails
// at once with [ErrUnavailable], without touching the network; then one
// operation at a time probes the server, and the first that succeeds ends
// the outage.
//
// A caller's context never starts an outage, as a caller's deadline never
// counts against a route's breaker: an operation cut short (canceled or
// timed out) by the caller's context, which ended, or whose deadline
// bounded the operation rather than Timeout and has passed (the network
// gives up at that instant, a hair before the context says so), returns
// the context's error and leaves the Store as it was, for every other
// caller. What starts an outage is the Store's own Timeout, a connection
// refused or dropped (even when the caller's context ended meanwhile:
// go-redis waits between dials) and a reply naming a state of the server
// that passes (LOADING, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, BUSY,
// OOM, ...: [ErrUnavailable] lists them; TestPassingStatesAreUnavailable).
// So a tenant whose deadlines are shorter than a round trip fails alone
// (TestCallerDeadlineStartsNoOutage,
// TestShortCallerDeadlinesKeepStoreAvailable), and a stalled server, or
// a stopped one (go-redis dials in the background, retrying the dial for
// about 400 ms), is found out by the first caller whose deadline outlasts
// Timeout, or once go-redis reports its refused dials; a caller with a
// shorter deadline waits at most its own.
//
// A reply that refuses the operation for good (NOPERM from an ACL,
// WRONGTYPE from a key of another type under the Prefix, an ERR from a
// script, NOAUTH, CROSSSLOT) is a configuration error or a bug, not an
// outage: the server answered. The operation fails with [ErrRefused]; the
// Store stays available and fails no other operation at once (a refusal
// of one key, one tenant's, or of one script leaves every other operation
// to the server, and a fixed configuration works from the next call), and
// the Logger gets one error record per kind, the reply's first word,
// however often it repeats (TestRefusalStartsNoOutage). A probe the server
// refuses ends an outage (TestProbeRefusedEndsOutage). The layer decides
// the refused call as one the store did not answer, by its failure mode
// below: the store gave no decision, and failing open on the local share
// keeps a misconfigured deployment serving within 1/Instances of each
// limit per instance, where refusing every call would turn a wrong ACL
// into an outage of the service and admitting every call would drop the
// bound; fail-closed layers refuse it and an effect does not run
// (TestRefusalFailureModes). Each such call costs a round trip, with no
// fail-fast.
//
// The Store logs a warning when an outage starts and a record when it ends;
// each layer reports each call it decides without the store as a
// [portico.EventSharedStore] event (a span event and a metric in package
// trace) and chooses, by its Config:
//
//   - ratelimit fails open (Shared.FailOpen: each instance's local share,
//     1/Instances of each limit, kept while Redis answers, admits what the
//     instance had not used of it; ratelimit's documentation, Shared
//     buckets, states the rule and its bound) or closed (refused,
//     [portico.Rejected], wrapping ratelimit.ErrStoreUnavailable);
//   - retry fails open (its local share of the budgets, by the same rule)
//     or closed (no retry);
//   - effect always fails closed (the effect does not run; a Transient
//     error wrapping effect.ErrStore): at most once admits nothing else
//     (a claim that may have landed is released, or claimed again by the
//     caller's retry with its claim token);
//   - fallback fails open: each instance skips the routes of the cooldowns
//     it set or last read (reason "fallback:fail_open", once per request);
//     a Set made during the outage stays pending and is written once the
//     server answers, so the others learn it if it has not ended by then.
//     Shared breakers likewise fall back to each instance's own.
//
// A settle that fails is lost (logged, with the number of settles lost):
// a lost refund makes the key stricter until it refills, a lost surcharge
// looser by that many tokens. The in-flight
// cap and queue of a Limiter stay per process. Waiting calls are served
// in arrival order within an instance (its waiters of one key wait in
// line, and only the first asks the store again, when the wait it was
// given ends), not across instances, whose heads of line race, and [ratelimit.Limiter.SetLimit]
// changes the limits this instance gives the scripts without clearing the
// provider views held in Redis, which expire with their hold.
//
// The client must have ContextTimeoutEnabled, or go-redis would ignore the
// per-operation deadline and wait for its ReadTimeout (seconds); [New]
// refuses a client without it. Set Timeout above the server's tail round
// trip: a timeout on a healthy server is an outage for Probe.
//
// # Effect records and store loss
//
// A server that loses its records (killed and restarted without
// persistence, FLUSHALL, a replica promoted before it had the last
// writes) would make a key whose effect ran, or is running, look like a
// key that never ran. Every effect script therefore checks the store's
// epoch, a hash holding a random id, the run_id of the server (INFO
// server; none where a managed service refuses INFO in scripts) and the
// time a loss was detected, kept beside the records (one
// per hash slot on a Cluster, so that a script touches one slot; none on
// a Ring, which keeps only package effect's own rules). Each [Effects]
// remembers the epoch id it saw last. A loss is detected when the epoch is
// absent while the caller knew one (restart, flush), when it is not the one
// the caller knew, or when the server is not the one that last checked it
// (a failover, or a restart from a file). Eviction is not detected: a
// key the server evicts under maxmemory is gone while the epoch stays, so
// the server that holds effect records needs maxmemory-policy noeviction
// (Redis's default), under which a full server refuses a write rather
// than drop a key.
//
// For a quarantine after the loss is detected, a claim to start a run of
// an absent key is refused, nothing stored: the key may have been lost
// and its run may be under way elsewhere. The error wraps
// effect.ErrQuarantined (Transient, NotSent) with the quarantine's time
// left as RetryAfter, and the caller runs the step when it comes back. A
// Pending claim marked Renew (the beat of an owner under way) and an
// outcome written back by its owner are stored as usual.
//
// The quarantine lasts Probe + 3 x (Poll + Timeout) by the claiming
// Runner's Poll and this Store's Config (1.45 s with the defaults: 1 s +
// 3 x (100 ms + 50 ms)), not a Lease, because it only has to outlast one
// beat of every owner still running, and one write-back of the outcomes
// every Runner keeps: the owner's Runner sends its claim every Poll (a
// ticker; each send bounded by Timeout), and every Runner that keeps
// outcomes checks the epoch every Poll ([Effects.Losses]) and writes them
// back in the same Poll when it finds a loss. Through a restart
// the owner's own Store fails its operations, and after a failure makes
// none for Probe; its last failure is at most a Timeout after the server
// answers again (the loss is detected no earlier), its next beat after
// Probe and at most a Poll, or two when another operation is probing at
// that moment, and that beat lands within a Timeout. So by Probe + 2 x
// (Poll + Timeout) every owner whose Store reaches the server has written
// its claim back, and a later claim finds it pending; a Runner's check of
// the epoch lands as a beat does, and its write-back, 16 outcomes at a
// time, within one more Timeout for 16 outcomes (the third Poll +
// Timeout), ceil(n/16) Timeouts for n in the worst case (each write a
// round trip, far below a Timeout on a healthy server). This assumes every
// process sharing the server uses the same Poll, Timeout and Probe. An
// owner that cannot reach the server for the whole quarantine (cut off
// from it while others reach it) cannot write its claim back, and its key
// may run again after the quarantine: the owner is then told, with its
// result, an error wrapping effect.ErrUnknown (see Store loss in package
// effect; TestOwnerCutOffThroughLoss).
//
// The quarantine also waits for the Runners that keep outcomes: each is a
// member of the epoch, a field of its hash with a deadline (its last
// [Effects.Losses] + its effect.Config.Hold, 10 s by default) and the
// epoch it last wrote back for. Losses renews it every Poll and, in the
// same script, reads the members back (no extra round trip; the other
// scripts read them at most once a Poll). After a loss, every Effects
// whose poll sees the new epoch publishes the members it saw before it;
// a member whose hash was kept (a failover) is in it already. Claims of
// absent keys are then refused until every such member has written back
// for the new epoch or its deadline passed, with RetryAfter a Poll once
// only members are awaited. So an owner that is alive but slow (its
// replies late, each operation timing out and its Store waiting a Probe
// after each) writes back before anyone runs its steps, for up to its
// Hold (TestEffectSlowOwnerThroughLoss: replies late past its Timeout
// for 3 s after a FLUSHALL or a SIGKILL, 20 of 20 steps run once; before,
// with the fixed quarantine alone, 20 of 20 ran twice). A Runner leaves when it keeps no
// outcome or is closed. What it cannot cover: an owner that died, or is
// cut off beyond its Hold (its steps run again after it, and the owner,
// writing back, logs each step it finds run again:
// TestEffectSlowOwnerThroughLoss with a Hold of 1 s), and a loss after
// which no member but the slow one polls within the fixed quarantine
// (nobody publishes it).
//
// What this gives: at most once through a loss for every key whose run
// was under way, provided some instance that knew the epoch, or any
// instance after a change of server, touches the slot before a process
// started after the loss claims the key: the owner of a run under way
// sends its claim again every effect.Config.Poll, and so do the pollers of
// a pending key, so the window is one Poll after the loss
// (TestEffectNewcomerAfterLoss). The cost of a loss: new steps are refused
// for the quarantine, then run once (TestEffectNewStepAfterLoss: 30 new
// steps after FLUSHALL and after SIGKILL and restart, each refused, never
// stored, run once after the quarantine, while the owner of a run under
// way keeps its run exclusive). A completed record that was lost is
// written back within the quarantine by the Runner that completed it, if
// that Runner is alive, reaches the server and still keeps it (see Store
// loss in package effect: the latest 1,024 outcomes by default); else it
// runs again when next asked for after the quarantine. Exactly once
// whatever happens to the instances needs a server that loses no
// acknowledged write: appendonly yes with appendfsync always, and a
// failover only to a replica that acknowledged every write (Redis
// replication is asynchronous: a client must WAIT for it, which this
// package does not). A restart or a failover is treated as a loss even
// then: it costs a quarantine of refused new claims, never a second run.
// TestEffectOnceThroughStoreLoss runs 50 instances on one key through
// each of the three losses on a real server, and three steps completed
// before the loss on instances of their own: the effect under way runs
// once, and each caller gets its result or Unknown; each completed step
// runs once, its outcome written back by its instance (also with replies
// to that instance lost), but for the one whose instance died before the
// loss, which runs again. Its "kill, aof" case kills a server with
// appendonly yes and appendfsync always and restarts it: the keys
// completed before run no more, the key under way runs once, every
// caller gets its result and none is refused.
//
// # Cost
//
// A request through the preset with every store shared costs one round
// trip before it is sent (see One round trip per request) and none after
// its answer on the caller's path: its settles leave in batches, sent by
// the Store's goroutine. A shared Limiter alone costs one round trip to
// admit; a retry budget alone one per request (the deposit; none with
// Budget.NoRefill) and one per retry. bench_test.go measures them beside
// the in-memory Limiter; bench/ (BenchmarkRedis) beside PING and
// redis_rate.
// Cooldowns cost a request nothing on the wire (Until is a map lookup);
// each instance makes one round trip per Refresh and one per batch of
// Sets. An effect costs one round trip to claim and one to record; a
// Runner that keeps outcomes makes one round trip per Poll per slot it
// touched (its membership and the epoch, read back in the same script),
// one to leave, and its other scripts read the members at most once a
// Poll, in the same round trip.
package redisstore
