// Package retry is Portico's retry layer: it makes the attempts of a call that
// can succeed later, and no more than the call's deadline, its retry budget and
// its stream allow.
//
// A [Retrier] is built from a [Config] whose zero value is usable; its method
// value Wrap is a [portico.Middleware]:
//
//	r, err := retry.New(retry.Config{MinAttemptTime: 2 * time.Second})
//	// inside a route: breaker outside retry, validation inside it
//	m := portico.Chain(provider, brk.Wrap, r.Wrap, val.Wrap)
//
// # What is retried
//
// Only the classes that can succeed later (see [portico.Class]): Transient and
// RateLimited always, Ambiguous (sent, outcome unknown) unless
// [portico.Request.NoAmbiguousRetry] or Config.NoAmbiguousRetry forbids it,
// InvalidResponse only with Config.RetryInvalidResponse. Permanent,
// Incompatible, Unusable, Canceled, Deadline and Rejected (breaker open, load
// shed) are returned at once, as they are. Nothing is retried once a
// streamed chunk reached the caller.
//
// Retrying Ambiguous is the default because a stalled provider (an attempt
// or first-chunk timeout after the request was sent) is a failure a retry
// often cures, and the provider SDKs retry timeouts by default
// too. A generation has no side effect besides its cost (a tool's effects are
// guarded by package effect, never by the retry layer), but that cost is
// real: the abandoned attempt may have run to the end on the provider's
// side, so an ambiguous call retried once may be billed twice, input and
// output. The retry budgets bound how often that happens; set
// NoAmbiguousRetry, per request or per route, where a duplicate costs more
// than a failed call.
//
// # Waits
//
// Before retry i the Retrier waits uniform in [0, min(MaxDelay, BaseDelay*2^(i-1)))
// — "full jitter" (Marc Brooker, "Exponential Backoff and Jitter", AWS
// Architecture Blog, 2015; gRPC's retry design A6) — or, with
// [DecorrelatedJitter], min(MaxDelay, uniform[BaseDelay, 3*previous wait)); see
// [Backoff]. The ceilings come from github.com/cenkalti/backoff/v5's
// ExponentialBackOff with no randomization and multiplier 2, computed once per
// Retrier and shared read-only, so no call allocates a BackOff. backoff.Retry
// itself is not used: it cannot consult a budget, a deadline allowance or a
// stream, and its own randomization (±RandomizationFactor around the interval)
// is close to the "equal jitter" the AWS study ranks worst.
//
// A provider's Retry-After hint ([portico.RetryAfterOf]) replaces the backoff
// when it fits what the deadline leaves (RFC 9110, section 10.2.3); when it
// does not, or exceeds Backoff.MaxRetryAfter, the call ends at once with a
// RateLimited error that carries the hint ([ErrRetryAfterTooLong]), so an
// outer layer may fall back. It ends so too when the hint exceeds the wait
// the context allows ([portico.ContextWithMaxWait]): a fallback group that
// has another route for the request says how long a wait in place is worth
// (500 ms by default), since a retry layer inside a route cannot know the
// alternatives. A route that an outer layer keeps cooling down
// ([portico.ContextWithCooldown]: a fallback group's Cooldowns, which
// another instance's 429 may have set) is not called during its cooldown:
// before each retry, and again after its wait, a cooldown that ends later
// than the retry would go counts as the route's Retry-After, under the same
// rules, so the retry waits for its end or the call ends at once and the
// group moves on. The caps bound the whole wait before a retry, however
// many times the cooldown was extended during it.
//
// # Retry budgets
//
// Every retry needs a token from two token buckets: its (destination, client
// key)'s and its destination's, shared by all clients. A new request deposits
// Budget.Ratio tokens (0.1) in its client's bucket and Budget.DestinationRatio
// (the same by default) in its destination's; a retry withdraws one from
// each, and a retry that finds less than one in either is not made
// ([ErrBudgetExhausted], and a [portico.EventBudgetExhausted] event whose
// Reason names the budget). A retry takes its tokens only when it is made:
// from the process's buckets before its wait, so that a spent budget
// refuses at once, given back when the wait ends it (a cooldown, the
// caller gone); from a shared store, which has no refund, once the wait
// is over. The client's budget isolates tenants: one in an
// error loop empties only its own. The destination's bounds the load on a
// sick destination: in an outage every tenant fails at once, and client
// budgets alone would let each make its full MaxAttempts, multiplying the
// load by the retry count. This is the Google SRE book's pair, a per-client
// budget ("Handling Overload") and a per-destination one ("Addressing
// Cascading Failures"), and Finagle's RetryBudget, kept per destination
// service. Over any run, whatever fails and however many clients, a client's
// attempts are at most requests*(1+Ratio) + Burst and a destination's at most
// requests*(1+DestinationRatio) + DestinationBurst. A hedge (package hedge)
// takes its token with [Retrier.Take] when it is sent, and its call, marked
// [portico.Request.Hedge], deposits nothing, as it is no new request: hedges
// count in the same bound. The destination's burst
// defaults to 100, Finagle's reserve (10 retries per second over its 10 s
// window): ten clients' bursts, small beside the traffic of a destination
// with many clients. Under overload a 10% budget turns a metastable outage
// into a recovery: the package's tests reproduce the four policies of
// docs/SEEDS.md's overload table with this Retrier in front of
// modeltest.CapacityServer.
//
// Withdrawals from a destination's bucket are serialised by one lock per
// Retrier and its level is checked before the client's token is taken, so a
// refused retry consumes no token of either; an empty destination refuses
// before the lock. Budget.NoRefill makes both budgets fixed allowances (20
// retries without refill: 100 failing requests make 120 attempts, not 300).
// A budget is local to the process: ten processes with 20 each admit 200, as
// ten tenants with client budgets only (Budget.ClientOnly) do, unless
// Budget.Shared names a [BudgetStore] that they share (package redisstore
// keeps both buckets in Redis): then the ten admit 20 between them. When the
// store fails, a retry spends from this instance's local share of the
// budgets ([portico.Shared].FailOpen) or is not made, and a
// [portico.EventSharedStore] event says so. The share follows package
// ratelimit's fail-open rule (its documentation, Shared buckets, states it
// and its bound): bursts of 1/Instances (rounded down, at least 1), ratios
// unchanged, a retry made once the share holds 1/Instances of a token.
// What the shares held as an outage began, at most DestinationBurst (Burst
// for a client), the store still holds too: an outage that begins before
// failures have spent the burst can spend what is left of it twice, plus
// Instances-1 for the lead (TestSharedFailOpenExcess: 18 of 30).
//
// # Deadlines
//
// The deadline belongs to the whole call (Google SRE book, "Addressing
// Cascading Failures": propagate deadlines). Before each attempt the
// Retrier compares what the context's deadline leaves with Config.MinAttemptTime
// and stops with a Deadline error ([ErrNoTimeLeft]) instead of starting an
// attempt that cannot finish; it does not begin a wait after which the attempt
// would not fit. Every attempt runs under the caller's context, so it never gets
// more time than remains; Timeouts.Attempt bounds each attempt further.
// An attempt timeout is Ambiguous (the request may have been sent and run)
// unless the inner Model classified its own failure Transient, meaning it never
// sent the request: then it stays Transient and is retried like any transient
// failure. Either way it wraps [ErrAttemptTimeout].
//
// # Streaming
//
// For a request with OnChunk the Retrier watches each attempt: no first chunk
// within Timeouts.FirstChunk (TTFT) abandons the attempt
// ([ErrFirstChunkTimeout]), Ambiguous or, when the inner Model says it never
// sent the request, Transient as above, and retried as its class allows since
// nothing reached the caller; a gap longer than Timeouts.ChunkGap fails it
// ([ErrChunkGapTimeout]); a stream that trickles below Timeouts.MinRate
// tokens per second over a Timeouts.RateWindow after its first chunk fails
// too ([ErrSlowStream]). The floor is measured in ten steps of the window:
// chunks add their estimated tokens to one atomic counter, and a timer
// closes each step into a fixed ring and checks the last ten, so the
// memory is fixed and no chunk allocates. Each of these is a layer timeout,
// a fault of the route that its breaker counts. Once a chunk reached the
// caller's callback the attempt's error is final: a call cannot be retried
// transparently after its first tokens reached the user (a fallback group
// may continue it, see package fallback).
//
// Layers inside the Retrier that hold chunks back (package validate buffering a
// structured answer until it is accepted, a route.Cascade buffering a step)
// report each held chunk with [portico.Progress]; the Retrier installs the
// receiving function in each streamed attempt's context
// ([portico.ContextWithProgress]) and counts such progress as a chunk for the
// timeouts and the rate floor, so a slow but live answer is not abandoned. Progress is liveness,
// not delivery: after progress alone an attempt may still be retried.
//
// # Errors
//
// A call that ends after retries fails with a [*portico.Error] that keeps the
// last attempt's class and fields (Status, Code, Model, RetryAfter), or takes
// class Deadline ([ErrNoTimeLeft]) or RateLimited ([ErrRetryAfterTooLong]),
// and wraps the sentinel and every attempt's error, so errors.Is and errors.As
// find each. Its message says each thing once: "portico: rate_limited status
// 429: retry: 3 attempts failed: rate limited" (the last attempt's class and
// fields are the error's own, so only its reason and cause follow the
// summary); a timed-out attempt reads "retry: first chunk timeout (2s)",
// naming the timeout that fired and its duration. Its Usage is what the route
// billed over all the attempts: the sum, field by field, of each attempt's
// billed usage ([portico.UsageOf]), the one attempt's own *Usage when only one
// was billed, nil when none was; every attempt went to the same route at the
// same prices, so fallback's Response.Cost and ratelimit's refunds see the
// whole bill. An error the Retrier does not retry is returned as it is
// after the first attempt; after later ones it is wrapped the same way,
// with the summary "retry: stopped after 2 attempts" and no sentinel.
//
// The final error says [portico.Error.NotSent] only when no attempt was
// sent ([portico.NothingSent]). When the last attempt sent nothing (a
// throttle's, a limiter's or a breaker's refusal, a budget or deadline
// check below) but an earlier one was sent, the class, Status and Code
// are those of the last attempt sent, Ambiguous say, never Rejected: the
// request may have been executed and billed, which is what the caller and
// the limiters above must know (Permanent and Canceled, which end the
// request wherever it goes, are kept). The refusal says why the call
// stopped: its RefusedBy is the error's, it stays in the message and the
// error's tree (errors.Is(err, portico.ErrRejected) still holds), and a
// limiter above refunds only what it knows was not sent.
//
// # Observing
//
// Inner layers read the attempt's index and id with [portico.AttemptFromContext]
// (the first attempt keeps the caller's context, so it allocates nothing).
// Config.OnRetry and a [portico.EventRetry] event report each retry with its
// attempt index, class and delay.
//
// # Cost
//
// A first-try success costs two budget lookups (a sync.Map each, the
// client's and the destination's; with a Destination, whose buckets the
// Retrier holds from construction, the client's alone, and none for a
// request without a ClientKey) and, for each bucket below capacity, one
// atomic compare-and-swap: no allocation, no lock, no timer, no new
// context. A full bucket is only read, so busy keys
// with an unused budget share no written cache line. Budgets are bounded by
// Budget.MaxKeys, client and destination buckets each: full buckets and keys
// idle since the previous sweep are evicted.
package retry
