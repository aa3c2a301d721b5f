// Package breaker is a per-route circuit breaker: it stops calling a route that
// is down, fails those calls at once instead of after a timeout, and probes the
// route until it recovers.
//
// # The algorithm
//
// The three-state circuit breaker of Michael Nygard's "Release It!" (2007), with
// the sliding windows, minimum number of calls and slow-call rate of
// resilience4j's CircuitBreaker, gobreaker's one trip policy, and a bounded
// number of probes when the open interval ends (Google SRE book, "Addressing
// Cascading Failures"):
//
//   - [Closed]: calls go through. Each counted outcome enters a sliding window
//     ([Window]): the last Window.Calls calls (count-based, the default) or the
//     calls of the last Window.Duration (time-based, in 10 buckets). After each
//     failed or slow call, Config.Trip reads the window's [Counts] and may trip
//     the breaker; [DefaultTrip] does so at once on an Unusable failure, on 5
//     consecutive failures or a 50% failure rate over at least 20 calls, and
//     [OnClass], [FailureRate], [SlowCallRate], [ConsecutiveFailures] and
//     [AnyOf] build other rules.
//   - [Open]: every call fails at once with a [portico.Rejected] *portico.Error
//     wrapping [ErrOpen], whose RetryAfter is the time until the first probe.
//     After Config.OpenFor, or at the end of the latest Retry-After a counted
//     failure carried if that is later (held for [MaxRetryAfterHold] at
//     most), the next call moves the breaker to half-open.
//   - [HalfOpen]: at most Config.Probes calls run at once, counting any probe of
//     an earlier half-open period still running; the rest are rejected like in
//     the open state. Probes successful probes close the breaker with an empty
//     window; one failed or slow probe opens it again.
//
// # What counts
//
// The breaker reads [portico.FaultOf] (its breaker column): only the
// route's faults count as failures (Transient, RateLimited, Ambiguous,
// InvalidResponse and Unusable). The caller's (its cancellation, its
// deadline, a layer's cut of a short share of it), the request's
// (Permanent, Incompatible, an answer an acceptance check refused) and
// local rejections are ignored: neither success nor failure, so that one
// bad client cannot make a healthy model look down (resilience4j's
// ignoreExceptions); unanswered failures count halfway, see below. A
// panic in the wrapped Model counts as a failure and continues up the
// stack. A streamed call that the caller's own Request.OnChunk ended, by
// panicking or by returning an error (whatever its class), is the caller's
// fault and is ignored too, so a bug in one caller's callback cannot open the
// breaker for everyone; the panic continues up the stack and the error is
// returned as is. A call that began in a closed period that has since ended (the
// breaker tripped while it ran) is not counted at all: what it says is about
// the route before the trip, not about the closed period now under way.
//
// An unanswered failure ([portico.IsUnanswered]) is counted halfway: an
// unanswered cut ([portico.ErrUnanswered]: a fallback group ended the call
// at the end of its share, with nothing back, while another route stood
// ready), or a refusal not to be retried (a 5xx or 429 the provider
// advised not to retry, x-should-retry: false, which the adapter makes
// Incompatible and marks) enters the run of consecutive failures
// (Counts.ConsecutiveFailures), not the window, and fails a probe. Alone
// it is one caller's short deadline, or advice about one request; five in
// a row, with no answer between ([DefaultTrip]), are a route that answers
// no one, and any answer ends the run, so a healthy route that answers
// other callers is never opened by one caller's deadlines or one request's
// refusals, and its failure rate says only what it answered. The breaker
// reads only the mark, never a header.
//
// # Unusable and Retry-After
//
// An Unusable failure (a revoked key, a deleted deployment, a spent quota)
// trips the default rule at once: it does not heal in seconds, and every
// call counted until a threshold is one more round trip to a route that
// cannot answer. The breaker then probes every OpenFor (30 s), so a fixed
// key is seen within that; a fallback group moves each probe's request on
// to another route if the probe fails. A 404 for a model the client named
// is Unusable too: give each route its own Route.ModelName, or a Trip
// without OnClass, so that one client's wrong model cannot open the
// breaker for all.
//
// A route that announced when to come back is not probed earlier: a
// counted failure whose RetryAfter is set (a 429 or 503 with the header)
// raises the end of any open interval to that time, whether the breaker
// trips then, later, or on a failed probe (RFC 9110, section 10.2.3:
// Retry-After is how long the client ought to wait).
//
// # Shared by every instance
//
// Each process keeps its own breaker, yet an instance that sees a route
// fail can spare the others the failures it took to trip: with
// Config.Shared (a [portico.Cooldowns]; package redisstore's Cooldowns
// shares one over Redis), opening publishes the open interval's end under
// "breaker:" + Name, and every breaker of that Name, while closed, rejects calls as if
// open until then (reason "breaker open elsewhere"), reports State Open,
// is not Available and says when it will be. Only the open state is shared: each breaker keeps
// its window, trips on its own calls and probes its own way, and when the
// interval ends the others take calls closed while the one that tripped
// probes; a failed probe publishes the next interval. A breaker trips on
// what its own process sees, a broken local network included, and then
// opens everyone's: share only routes whose failures are the route's.
//
// # Reading the state
//
// [Breaker.State] never blocks (one atomic load, and a local read of the
// shared store when shared and closed), and [Breaker.Available] and
// [Breaker.RetryAfter] implement [portico.Health]: set a [portico.Route]'s
// Health to the Breaker and package fallback (and the routers of package
// route) skip the route while it is open, without waiting, and say when it
// will take calls again when no route does. Every state change is passed
// to Config.OnStateChange, which runs on the goroutine of the call that
// caused it and never under the lock, so it may read the state (unlike sony/gobreaker's OnStateChange, which runs under
// its mutex); it is also reported as a [portico.EventBreakerState] to the
// context's [portico.Observer], and logged.
//
// # Cost
//
// The closed state is lock-free and, unless the request streams,
// allocation-free (a streamed call costs two allocations: the request's
// copy that guards the caller's OnChunk, and its callback). A call loads
// the state word (state and generation) before and after it, to drop the
// outcome of a closed period that ended meanwhile, and adds itself to the
// window; a failed or slow call also sums the window and asks Config.Trip.
// On a count-based window without slow-call detection a success reads no
// clock; a failure, or any call else, reads it once after the call (and
// before it, for slow calls).
// The windows (count-based slots tagged with their call's sequence, time
// buckets with the closed period's generation) start each closed period
// empty without clearing anything. Locks are taken only on transitions, in
// the half-open state, and, in a time-based window, once per bucket width.
//
// # Where it goes
//
// In the recommended stack a breaker sits inside each route, outside the retry
// layer: it then sees one outcome per call (after retries), and a rejected call
// costs no retry.
package breaker
