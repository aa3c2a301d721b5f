// Package ratelimit decides who gets in, and how much: keyed token buckets on
// requests and on LLM tokens in series, wait-or-reject against the caller's
// deadline, an in-flight cap with load shedding, and an optional fair queue
// for agent programs.
//
// Build a [Limiter] from a [Config] with [New]; its method value
// [Limiter.Wrap] is the [portico.Middleware]:
//
//	lim, err := ratelimit.New(ratelimit.Config{
//		Limits: ratelimit.Limits{Requests: 500, Tokens: 200_000, MaxInFlight: 32},
//	})
//	model := portico.Chain(provider, lim.Wrap)
//
// # Two buckets in series
//
// Each key has a request bucket (Requests per Period, burst RequestBurst) and
// a token bucket on LLM tokens (Tokens per Period, capacity b = TokenBurst).
// Both are the same bucket code, written here because the token bucket needs
// refunds; the request bucket admits exactly what golang.org/x/time/rate's
// Limiter admits for the same rate and burst (see Performance). A call is admitted when both
// have room; when either refuses, neither is charged. A call's cost in the
// token bucket is N_in + N_max at admission: N_in from the [portico.Estimator]
// ([Config.Estimator], by default [portico.DefaultEstimator]), N_max the
// request's MaxOutputTokens or [Config.DefaultMaxTokens] (1024 by default,
// at most half the token bucket). When the call ends
// the bucket gets back (N_in + N_max) − the tokens of the response's usage
// that the provider's limit counts ([portico.Usage.Limited]: input plus
// output, less what the adapter says its provider exempts, such as
// Anthropic's cache reads), and is charged the excess when they were more (down
// to minus one period's quota at most, which the provider's window forgets
// anyway, so absurd reported usage cannot stall a key for centuries). A
// failed call is settled as Refunds below says.
//
// The token bucket guarantees that the net admitted cost (reservations minus
// refunds) over any interval dt is at most b + r·dt, refunds included: a
// refund never lifts the level above b. (To the nanosecond: both buckets
// admit, as rate.Limiter does, a call whose shortfall the refill covers
// within 1 ns, so dt counts one more nanosecond; at 10^4 tokens per second
// that is 10^-5 tokens.) The proof follows (The bound with refunds);
// property tests check it over every interval of random runs, of the bucket alone (and fuzzed) and
// of the whole Limiter with concurrent callers and refunds, beside a
// fixed window of the same nominal limit that admits twice the limit across a
// boundary. A call whose N_in + N_max exceeds b could never enter: it is
// refused at once with a [portico.Incompatible] error naming both numbers
// and the request's Model ([ErrOverCapacity], [*CapacityError]). Incompatible
// rather than Permanent, because the refusal is this route's, not the
// request's: Permanent says the same request fails again anywhere, and
// stops a fallback group, while another route with a larger bucket (a
// bigger tier, another provider) can serve the call. Like Permanent,
// Incompatible is never retried on the same route. An estimate's learned
// scale never causes that refusal: when the Estimator is [portico.Scaled]
// (a [portico.Calibrated] one) and its unscaled N_in + N_max fits b, the
// call reserves all of b instead and settles on its usage, as any
// estimate does (TestScaledNeverRefusesForGood), since a refused call
// teaches the calibration nothing and would be refused for good.
//
// # Refunds
//
// A failed call whose error carries what the provider billed
// ([portico.Error.Usage]: an answer rejected by validation, a stream cut
// after the usage was reported) is settled on that usage exactly as a
// success is, whatever its class. Without it, the bucket gets back what is
// known to be safe ([Refund]), since a provider may count a failed call
// against its limits:
//
//   - A call that ended before anything was sent gets its whole reservation
//     back. "Nothing was sent" means no adapter wrote the request: the error
//     is [portico.Rejected] (refused locally: a breaker open, a load shed),
//     or has [portico.Error.NotSent] set, or is Permanent, Incompatible,
//     Unusable, Transient or RateLimited without an HTTP status (refused
//     before sending, by an adapter that does not set NotSent: a refused
//     connection), and wraps no call that was sent ([portico.NothingSent],
//     [portico.SentIn]). Layers set NotSent when they end a call
//     before calling the model: this Limiter on every refusal and when a wait for
//     admission ends (Canceled or Deadline, so an outer Limiter over an
//     inner one in Wait mode gets everything back), package retry when no
//     time is left for the first attempt, package fallback when it called
//     no route (all skipped, out of time or canceled before the first), the
//     openai and gemini adapters when their context ended or their
//     transport failed before the request was written. A layer wrapping
//     several calls (retry, fallback, a hedge, a cascade) that stops at a
//     refusal after a call that was sent keeps that call's error in its
//     tree and NotSent false, so this Limiter refunds only what it knows
//     was not sent.
//   - A 4xx or 5xx answer of those classes gets the output reserve back:
//     nothing was generated, but the input may count.
//   - Anything else gets nothing: Ambiguous (sent, outcome unknown),
//     InvalidResponse, Canceled or Deadline without NotSent (the caller gave
//     up, perhaps mid-generation), an error inside a 200 stream, an error
//     that is not a [*portico.Error].
//   - A refusal (Rejected, or one of those classes without a status) from
//     a layer that wraps calls that may have been sent gets the least
//     that any of those calls would get back.
//
// # The bound with refunds
//
// Why a token bucket with refunds still admits at most b + r·dt.
//
// Let the events on the bucket be processed in time order t_1 <= t_2 <= ...
// (a time earlier than the last event is treated as the last event). Each is
// an admission of cost k (allowed only when level > k - r*1ns, and k <= b), a refund
// of ρ >= 0, a surcharge s >= 0 (usage beyond the reservation, charged after
// the fact) or a provider adjustment (the level lowered to what the provider
// says remains). Write U_m for the level just before event m, after refill:
//
//	U_m = min(b, L_{m-1} + r*(t_m - t_{m-1}))  <=  L_{m-1} + r*(t_m - t_{m-1})
//
// and L_m for the level just after it: L_m = U_m - k (admission),
// L_m = min(b, U_m + ρ) (refund; the credit actually applied, ρ' = L_m - U_m,
// is at most ρ), L_m = min(U_m, max(U_m - s, -F)) (surcharge, down to a
// floor -F at most; the debit applied, s' = U_m - L_m, is in [0, s]) or
// L_m <= U_m (adjustment). So every event moves the level by U_m - L_m,
// which is k, -ρ', s', or >= 0. Summing over
// the events i..j of any interval [t_s, t_e] and telescoping:
//
//	Σ (U_m - L_m) = U_i - L_j + Σ_{m=i+1..j} (U_m - L_{m-1})
//	              <= b - L_j + r*(t_j - t_i).
//
// Take j to be the last admission in the interval: then L_j > -r*1ns
// (admission requires level > k - r*1ns), and every surcharge and adjustment
// term is >= 0, so
//
//	Σ admitted k - Σ refunded ρ  <=  Σ k - Σ ρ'  <=  b + r*(t_j - t_i + 1ns)  <=  b + r*(dt + 1ns),
//
// and events after j in the interval are refunds or surcharges, which only
// lower the net admitted cost. A refund never lifts the level above b, which is
// why the bound holds on net withdrawals: the cap at b forgets any refund that
// would carry a future burst beyond b. Room left for waiters in line only makes
// admission stricter, and a SetLimit that changes b leaves
// the bound holding with the largest b in force during the interval.
//
// # Wait or reject
//
// In [Reject] mode (the default) a call the buckets cannot admit now fails at
// once with a [portico.RateLimited] error wrapping [ErrLimited] whose
// RetryAfter is the exact wait after which the same call would be admitted
// (429 with Retry-After): the least whole nanosecond by which the refill
// covers the shortfall, so the call is admitted at RetryAfter and refused 2 ns
// before it (1 ns before, it may already pass: admission forgives a shortfall
// the refill covers within 1 ns, as rate.Limiter does). In [Wait] mode the
// call waits that long when the wait fits both the context's deadline and
// [Config.MaxWait], and fails at once as in Reject mode otherwise. A waiting
// call holds its place in line: later calls leave room for it, so a large call
// is not starved by small ones, and the buckets are charged only at admission,
// so the bound is unchanged. A call whose context is done already (canceled,
// or past its deadline) takes nothing: it fails at once with
// [portico.Gone]'s error, before a slot, a token or a place in line is
// taken, and a [Store] is not asked. Waits select on ctx.Done() and a canceled wait
// gives its place and its slot back: the calls waiting behind it compute
// their waits again at once, so the next in line takes the place given
// back (with one request per second, if the call due at 1 s is canceled,
// the one due at 2 s goes at 1 s); so do all waiting calls when
// [Limiter.SetLimit] changes the limits, and when a call of the key ends
// with a refund: what the refund frees goes at once to the calls already
// waiting, in arrival order, and a later arrival never overtakes an earlier
// waiter. (At 1,000 tokens per minute, five calls of 400 at t = 0: the
// first two go at once, and when they end at 2 s having used 200 each, the
// third goes at 2 s and the fourth at 12 s, where without the refunds they
// would go at 12 s and 36 s.) MaxWait bounds the total wait. Waits and
// rejections are reported to the context's [portico.Observer] as
// [portico.EventRateLimitWait] and [portico.EventRateLimitReject].
//
// # Keys
//
// The default key is the pair (Identity.ClientKey, Model): one client looping
// on errors empties only its own buckets. [Config.Key] gives any other split;
// [ByClient] and [ByModel] are the two halves. The recommended stack has a
// per-client Limiter outermost and a per-model one inside each route; each
// names itself in its refusals ([Config.RefusedBy], read with
// [portico.RefuserOf]: [portico.ClientLimit] or [portico.RouteLimit]), so
// that a service tells its caller "your plan" from "we are saturated".
// Looking up an existing key allocates nothing. Idle keys (buckets full,
// nothing in flight or queued) are evicted when their shard of the table
// doubles, and by a sweep that a timer runs once a period (the limits'
// refill time, at least a minute) while the table holds keys: their state
// equals a fresh key's, so memory stays bounded by the keys active within
// about one refill period, and a million clients that called once leave
// nothing behind within two periods of going idle. A call on a live key
// does none of this work.
//
// # Tiers
//
// A multi-tenant service sells plans: [Config.Tier] names a request's tier
// and [Config.Tiers] gives each tier its Limits (free tenants 10 requests a
// minute, pro 600, enterprise a token budget), through one Limiter; a
// request whose tier is not in Tiers has [Config.Limits]. The tier is read
// when the key's entry is made, its first call or the first after it was
// evicted as idle, and kept in the entry, so a call on a live key pays
// nothing for it, and a tenant moved to another plan takes the new limits
// when its entry is made again (within two janitor periods of going idle).
// [Limiter.SetTierLimit] changes one tier's keys live, [Limiter.SetLimit]
// the default's only. A call is priced before its key is known, against
// the largest TokenBurst of any tier, and checked against its own key's
// capacity before it takes a slot; a call that cannot be priced (no
// MaxOutputTokens under [RequireMaxTokens]) is refused only on a key with a
// token bucket. With a [Store] the tier is read on every call, since the
// store keeps no entry, and the in-flight cap and the local share follow
// the tier too.
//
// # Provider feedback
//
// When a response or an error carries the provider's view of its limits
// ([portico.RateLimit], from x-ratelimit-remaining-* and reset-* headers), the
// key the call went through adopts the tighter of that view and its own: the
// level drops to what the provider says remains, and until the provider's
// reset the refill runs at the provider's rate when that is slower. The next
// calls then wait locally instead of collecting 429s. One announcement holds
// the key tighter for [Config.MaxProviderHold] at most (one minute by
// default, the window of the per-minute limits a local bucket mirrors): a
// daily quota's reset, hours away, does not stall the key for the rest of
// the day. Quotas a provider keeps on input or output tokens alone
// (Anthropic's ITPM and OTPM, [portico.RateLimit].InputTokens and
// OutputTokens) hold the input-plus-output token bucket at the share of its
// burst that the quota has left, so an exhausted output quota stops the key
// until its reset. [Limiter.SetLimit] changes the configured limits of the
// keys on the default limits live ([Limiter.SetTierLimit] those of a tier's
// keys), and clears their provider views adopted so far: the operator's
// word wins.
//
// # Shared buckets
//
// Buckets live in the process unless [Config.Shared] names a [Store] that
// several processes share (package redisstore keeps them in Redis): then
// every instance's calls draw on one pair of buckets per key, reserved,
// settled and tightened by provider headers as above, with the store's
// clock. The in-flight cap and the queue stay per process. When the store
// fails, the call is decided on this instance's local share of the buckets
// ([Shared.FailOpen]) or refused ([ErrStoreUnavailable]), and a
// [portico.EventSharedStore] event says so. A Limiter without a Store takes
// none of this path: Wrap chooses once.
//
// Failing open follows one rule, the retry budget's too (package retry,
// Shared): each instance keeps, per key, a share of each bucket of
// 1/Instances of its limit and burst (rounded down, at least 1), charged
// for every call the store admits for this instance (never below zero),
// given its refunds, and lowered to 1/Instances of what the store had left
// when the store refuses a call (a refusal with wait w for a call needing
// k says the bucket held k - r·w). When the store fails, the share alone
// decides, from the first call of the outage, on what this instance had
// not used of its 1/N; it is neither emptied nor refilled as an outage
// begins or ends. A call is admitted once the share holds 1/N of its cost
// (the rest is owed, paid back by the refill before its next call): N
// shares cannot pool the fractions of a call each holds, and without this
// lead 3 instances at 1 request a second admit 3 of the 5 the shared
// bucket would over 5 s. So a tenant under its limit is served through an
// outage, one over it gets about r·dt between the instances, and a store
// that flaps hands out no burst at each failure.
//
// The bound across N instances: over any interval dt, the net admitted
// cost is at most b + r·dt + A. The allowance A is r·d, d the time within
// dt during which the store failed (the store's bucket refills meanwhile
// and is not charged for what the shares admitted); plus what the shares
// held as the outage began, which the store still holds too: about 0 when
// the tenant had emptied the store's bucket (the instances saw it refuse),
// about the bucket's level when the instances share a tenant's load under
// its limit (each share mirrors its 1/N of it), b·(N-1)/N when one
// instance spent the whole burst and the others, which saw no refusal,
// call only once the store has failed, never more than b;
// plus (N-1)·k for the lead, k the largest call's cost (1 request). A
// store that loses its data (restarted empty) starts full: its own
// bucket then admits b more. TestFailOpenFleet checks the bound over every
// interval with 3 instances at 60 requests a minute and a 10 s outage (a
// tenant at twice the limit, at half of it, one instance taking it all, a
// store failing 200 ms of every second), and that the instances admit at
// least 80% of what the shared limit would have admitted of the same
// calls; redisstore's TestFailOpenShares does against a real Redis
// stopped, paused, and killed and restarted.
//
// # Leases
//
// A shared Limiter asks its store on every call ([Strict]): one round
// trip to admit, exact across instances. [Config.Sharing] [Leased]
// (needing a [LeaseStore], as package redisstore's Buckets) takes instead
// a lease of a slice of the key's buckets, and admits calls locally while
// it lasts, as Google's Doorman hands its clients capacity leases that
// they spend without asking again (github.com/youtube/doorman,
// doc/design.md). A lease holds at most a hundredth of each burst (or one
// call's cost, when more) and admits calls for a twelfth of the limits'
// Period (5 s for a minute); the next call after it ran short or ended
// gives back what is left and takes the next lease in the same round
// trip, asking twice what the calls took of the last one (so a hot key's
// leases double up to the hundredth, an idle key's shrink to its calls),
// one lease under way per key and instance. An idle key's first call
// costs the one round trip of strict mode: the lease is its admission.
// A hot key costs a round trip per lease: at most 0.1 per call when a
// lease holds ten calls. A refused lease is remembered until its wait
// passes, for calls as costly, so a key over its limit does not ask the
// store on every call. Refunds go to the lease, never beyond what it was
// granted (the rest is owed back with the next lease); a provider's view
// caps what the lease holds at once and reaches the store with the next
// lease. A key no call used for a minute is dropped with what its lease
// held, which the store's refill restores.
//
// The bound with leases: over any interval dt, the net cost the N
// instances admit is at most b + r·dt + L, L being what their leases
// held as the interval began, at most N·max(b/100, k), k the largest
// call's cost: ten instances, a tenth of the burst. Every call admitted
// under a lease was taken from the store's bucket when the lease was
// granted, a lease given back is a refund, and the store's bucket keeps
// b + r·dt on its net withdrawals (The bound with refunds, above); what
// the instances admit in the interval is what they held as it began plus
// what they took in it, less what they gave back or still hold. A lease
// the store granted but whose reply was lost (a timeout, a pause, a lost
// reply) is held by no one: the bound is only stricter. When the store
// fails, an instance admits from the lease it holds until its end, then
// as Shared buckets says (failing open on its share, within the
// allowance A stated there, or refusing), so that the bound under faults
// is b + r·dt + L + A (plus b when the store lost its data, as above).
// redisstore's TestLeaseBoundTenInstances checks it over ten instances
// against a real Redis; TestLeaseOvershootIsTheLeases that it is
// reached (ten leases of 10 grown, the store's bucket then spent by a
// strict instance, then the leases: about 90 beyond b + r·dt, L = 100);
// TestLeaseFaults with the store stopped, paused, killed and restarted
// empty, slow, and losing replies, failing open and closed.
//
// [Auto], the zero Sharing, is Leased where a lease holds at least ten
// calls of every bucket: a RequestBurst of at least 1,000 requests and a
// TokenBurst of at least 1,000 times Config.DefaultMaxTokens (1,024,000
// tokens by default), and Strict where the limit is small (a lease of a
// 5-per-minute bucket would be most of it, and the bound's L with it). A
// provider account's limits (5,000 requests and 2,000,000 tokens a
// minute) are leased; a tenant's plan (600 requests, 200,000 tokens) is
// strict.
//
// # In-flight cap, shedding and queues
//
// [Limits.MaxInFlight] caps the calls of a key in flight (L_max). Beyond it a
// call is shed at once with a [portico.Rejected] error wrapping
// [ErrOverloaded] (Reason "overloaded"): by Little's law the admitted rate is
// then L_max / W and falls by itself when the model's latency W grows.
// [Config.Concurrency] makes the cap move with the destination's capacity
// (package adaptive's AIMD, Vegas and Gradient2 limits): the Limiter caps
// the calls at the tighter of it and MaxInFlight, and reports each admitted
// call's latency and outcome to it (a cut of a short share of the caller's
// deadline, [portico.ErrDeadlineCut], as the caller's deadline); a raised
// limit goes to queued
// calls at the next completion.
// With a positive Queue.Size (see [Queue]) calls wait for a slot instead, in a bounded queue
// served in the [Order] chosen: [FCFSCall] (vLLM), [FCFSProgram] (Continuum)
// or [PLAS], least attained service per program in discrete levels with a
// starvation guard (Autellix; see [PLASConfig]). The package's tests
// reproduce the simulation of docs/SEEDS.md (4 slots, ~85% load) with this
// queue: with unequal program
// lengths PLAS gives the shortest mean for short programs and for all, and
// with seven calls for every program FCFS per program beats PLAS.
//
// # Priorities
//
// A request's [portico.Priority] (Critical, Default, Sheddable: Google's
// criticality) comes before the Order: the queue serves the highest
// priority first, and a full queue sheds a call of the lowest priority
// queued (its own, aging aside) when that is below the arrival's, so
// under overload the lowest priority is queued and shed first: a
// priority is refused only while every lower one is. Against starvation
// in the queue a queued call ranks one priority higher for each
// [Queue].Aging it has waited ([DefaultAging], 10 s): a Sheddable call
// waits at most twice that to rank as Critical. Under sustained overload
// a Sheddable call is still shed by any higher arrival that finds the
// queue full: shedding it is what its priority asks. [Config].Reserve keeps slots of the cap free for
// higher priorities, so that they find room even without a queue: a
// Default call leaves Reserve slots free, a Sheddable one twice that
// (one rule for every cap, [portico.Priority.Slots]). The cap moved by
// Config.Concurrency (package adaptive) is honoured the same way: when
// it falls, the calls at its edge are the lowest priority's. A rank rises
// with time alone, so the queue is dispatched at each aging step while a
// waiter is held only by Reserve, and before an arrival is queued, shed or
// evicts. The tests TestPriorityQueueOrder, TestPriorityAging,
// TestPriorityEvict, TestPriorityEvictByOwnPriority, TestPriorityReserve,
// TestAgingStartsWaiterHeldByReserve and TestQueueDispatchesBeforeShedding
// pin each rule.
//
// # Performance
//
// The happy path (an existing key, both buckets with room, the refund at
// completion) allocates nothing (a test pins it): one read of the
// monotonic clock (internal/mono, as in every layer: times are kept as its
// readings, so the buckets do integer arithmetic), one lock of the key for
// both buckets and the slot count at admission and one at completion, the
// key looked up in one of 64 shards of the key table (a map under a
// mutex), and the estimator, run only when there is a token bucket. The request bucket is
// the token bucket's code with cost 1, under the key's lock, not a
// rate.Limiter with a mutex of its own; a differential test pins that it
// admits what rate.Limiter.AllowN admits, to the bit, for random sequences
// of (time, n). BenchmarkAdmit and BenchmarkPairedCPU measure it beside
// rate.Limiter.Allow, bench/ BenchmarkTenants among a million keys.
//
// # Sources
//
// The token bucket and its b + r·dt bound (the meter of RFC 2697 and of
// golang.org/x/time/rate); reserving N_in + N_max and refunding the unused output, as
// OpenAI's rate limits count max_tokens against the token limit until the
// call ends; per-client limits and shedding beyond an in-flight cap (Google
// SRE book, "Handling Overload"); the admitted rate L_max / W of a capped
// system (Little's law, 1961). Program-level scheduling after Autellix (Luo
// et al., "Autellix: An Efficient Serving Engine for LLM Agents as General
// Programs", 2025) and Continuum (Li et al., "Continuum: Efficient and
// Robust Multi-Turn LLM Agent Scheduling with KV Cache Time-to-Live", 2025).
// The request bucket's semantics are x/time/rate's. docs/SEEDS.md maps these
// sources to the seed documents.
package ratelimit
