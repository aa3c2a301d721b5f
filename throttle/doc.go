// Package throttle is client-side adaptive throttling: a client that sees a
// destination refuse most of its requests starts refusing them itself,
// locally and at once, so that an overloaded destination spends nothing on
// requests it would refuse anyway.
//
// # The algorithm
//
// Google's SRE book, chapter 21 "Handling Overload", section "Client-Side
// Throttling" (Beyer et al., "Site Reliability Engineering", O'Reilly 2016):
// each client keeps, per destination and over the last two minutes,
//
//   - requests: the requests the application made, those the client
//     rejected itself included;
//   - accepts: the requests the destination accepted;
//
// and rejects each new request locally with probability
//
//	max(0, (requests - K*accepts) / (requests + 1))
//
// Under normal conditions the two counts are equal and nothing is rejected.
// Once the destination accepts fewer than 1/K of the requests, the client
// sheds the excess, and as the local rejections count as requests the
// probability climbs towards 1 while the destination keeps refusing. K = 2
// (the default, [DefaultK]) lets through about twice what the destination
// accepts, which wastes some of its work but learns quickly when it
// recovers; K = 1.1 is more aggressive. gRPC's RLS client throttler
// (balancer/rls/internal/adaptive in grpc-go) is the same rule.
//
// A Throttle adds what failsafe-go's adaptive throttler
// (adaptivethrottler.computeRejectionRate) adds so that a client keeps
// probing: the probability is
//
//	0                                                    if requests < MinRequests
//	min(MaxRejection, max(0, (requests - K*accepts) / (requests + 1)))  otherwise
//
// and, under a cap (MaxRejection below 1), a call the Throttle rejects is
// not counted at all: the window holds the destination's verdicts only, as
// failsafe-go's does. The defaults are failsafe-go's 0.9 ([DefaultMaxRejection])
// and 10 requests ([DefaultMinRequests]); MaxRejection 1 and a negative
// MinRequests are the book's rule whole, rejections counted. See Recovery
// for why, and for what the cap costs.
//
// A [Throttle] built from a [Config] is one destination's: one window in 32
// buckets of 1/32 of it each (about 800 bytes), so a count leaves the window
// at most one bucket width (3.75 s of two minutes) late. Its method value
// Wrap is the [portico.Middleware]; package stack builds one per route.
//
// # What counts as an accept
//
// By [portico.FaultOf] (its throttle column): an answer, and a failure
// that is the request's ([portico.Permanent], [portico.Incompatible], an
// answer an acceptance check refused), is an accept: the destination took
// the request, which says nothing about its load. The route's fault
// (Transient 5xx and connection failures, RateLimited 429, Ambiguous
// timeouts, InvalidResponse, Unusable) is a request not accepted, and so
// is every call the Throttle rejects. The caller's (its cancellation, its
// deadline, a layer's cut of a short share of it), an unanswered failure
// (a breaker counts a run of them) and another local layer's refusal are
// not counted at all: the destination gave no verdict on its load.
//
// A rejected call fails with a [portico.Rejected] error wrapping
// [ErrThrottled] and a [*Error] with the counts, which package fallback
// treats as "try another route" and package retry does not retry.
//
// # Priorities
//
// A request's [portico.Priority] scales K: a Default call's multiplier is
// K, a Critical call's 2K, a Sheddable call's K/2 (at least 1). A client
// therefore starts rejecting Sheddable calls as soon as the destination
// accepts fewer than min(1, 2/K) of the requests (any refusal, at K = 2), Default
// calls below 1/K and Critical calls below 1/(2K), and at every ratio
// rejects a lower priority with a higher probability: the lowest
// criticality is shed first, as the SRE book's criticality (chapter 21)
// asks, while one window of the destination's verdicts serves them all
// (the destination does not know the priorities, so separate windows would
// count the same verdicts). Under the book's rule (MaxRejection 1) a
// rejection of any priority counts as a request not accepted, and so
// raises every priority's probability. TestPriorityMultiplier pins the
// three probabilities.
//
// # Few requests
//
// The book's rule, "+ 1" included, is harsh when the window holds few
// requests: one failure in an empty window gives a probability of 1/2.
// gRPC's RLS throttler pads the denominator with 8 instead of 1 to soften
// that; a Throttle, as failsafe-go's, rejects nothing until the window
// counts Config.MinRequests requests, and its window forgets a failure after
// Config.Window.
//
// # Recovery
//
// Under the book's rule, after a full outage the window is full of
// requests not accepted (the client's own rejections above all), so the
// destination, healed, sees almost nothing at first, and the fraction q of
// calls let through grows only with the accepts it earns: q is about K
// times the accepted fraction of the window W, so it grows as e^(x*t/W),
// where x solves x = K*(1 - e^-x) (x = 1.59 for K = 2): it doubles about
// every 0.43 window, and a client sending n requests per window recovers
// in about 0.43*W*log2(n/K). At 10 requests per second the last local
// refusal comes 10 minutes after the healing with the default two minutes,
// 5,451 requests refused meanwhile (TestFigureOutage).
//
// Under the cap, a tenth of the calls (by default) reach the destination
// whatever the window holds, and the window counts only what the
// destination said: its refusals during the outage, its accepts after it.
// The accepts outweigh the refusals within a fraction of the window: in the
// same test the last refusal comes 24.8 s after the healing (155 refused),
// and for a client sending from one request every 5 s to 100 a second,
// within half the window (TestRecoveryRates). The price is twofold. During the outage
// the destination receives a tenth of the traffic (618 of 6,000 requests
// instead of 13). And under overload, as rejections no longer count, the
// client lets through about sqrt(K * demand * capacity) instead of K times
// what the destination accepts: 4.5 requests a second instead of 2 for a
// destination that accepts 1 of 10 (TestFigureOverload). Set MaxRejection
// to 1 where shedding load matters more than coming back.
//
// # Cost
//
// While the window holds accepts only, nothing can be rejected, so a call
// costs two atomic loads before it and one atomic add after it: accepts
// are counted in batches of 64, each stamped with the time when the batch
// fills, so a clean window reads the clock once per 64 calls and counts an
// accept at most 63 calls late. Once a request was not accepted, every
// call reads the clock, counts itself in its bucket and computes the
// probability (a scan of the 32 buckets), until the window holds accepts
// only again.
//
// # Where it goes
//
// In the recommended stack (package stack, Route.Throttle) the Throttle is
// the innermost layer of a route, around the provider adapter, inside the
// retry layer and the acceptance pipeline: every attempt, retries included,
// is a request, and a schema violation found by package validate, the
// answer's fault rather than the destination's load, is not seen. A
// rejection ends the route's call at once (retry does not retry Rejected),
// the breaker ignores it, and a fallback group moves on.
package throttle
