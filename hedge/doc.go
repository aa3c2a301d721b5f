// Package hedge sends hedged requests: when an attempt has not answered
// after a delay, a second one goes out, the first answer wins and the
// others are canceled. It trades a few percent more calls for a much
// shorter tail of latency.
//
// # The idea
//
// Dean and Barroso, "The Tail at Scale" (Communications of the ACM 56(2),
// 2013): the slowest few percent of calls, whatever their cause (a busy
// replica, a cold cache, a queue), set the latency users feel. Sending a
// second copy of a call that is slower than the 95th percentile of its
// kind bounds the extra load to about 5% and cuts the tail to about the
// delay plus a normal call's latency: in their BigTable measurement the
// 99.9th percentile fell from 1,800 ms to 74 ms for 2% more requests.
// gRPC's hedging policy (gRFC A6) and Envoy's request hedging are the same
// mechanism; this one adds what LLM calls need.
//
// # What a Hedger does
//
// A [Hedger] built from a [Config] races the attempts of a request ([Hedger.Run]):
//
//   - The delay is Config.Delay, or Config.Percentile (the 95th by default)
//     of the destination's observed latency: the time to the first chunk
//     when streaming, to the answer otherwise, kept in a bounded [Latency]
//     sketch (a log-linear histogram of the last 1,000 to 2,000 calls, 4 KiB,
//     within 9%). It learns from attempts that were not hedges; one that a
//     hedge beat counts at the time it was canceled, a lower bound that
//     keeps the share of slow calls right.
//   - Only a request that may be sent twice is hedged ([MayRepeat]):
//     generation has no side effect besides its cost, which a caller may
//     refuse to pay twice with Request.NoAmbiguousRetry.
//   - A hedge is charged one token of the destination's retry budget
//     (Config.Budget, package retry's Retrier: [Budget]); an empty budget
//     skips the hedge and leaves the running attempt alone, reported as a
//     [portico.EventHedge] with Reason "budget". A hedge is sent marked
//     ([AsHedge], portico.Request.Hedge), and the retry layer it reaches
//     deposits nothing for it, so hedges and retries keep the budget's
//     bound. At most Config.MaxInFlight attempts run at once, and a hedge
//     is never hedged again. With a Config.Cost, a hedge that would make
//     the attempts sent cost more than the request's Contract.MaxCost is
//     not sent either (Reason "max cost"): every attempt may be billed.
//   - The first answer wins; the others are canceled with a cause their
//     breakers and limiters see as a cancellation (not the route's fault), and
//     waited for, so nothing of the request runs after it returns. A
//     canceled attempt's limiter frees its slot at once and settles its
//     tokens as for any canceled call: kept once the call was admitted (it
//     may have generated output) unless the adapter says the request was
//     not written yet (portico.Error.NotSent), nothing charged before. So
//     a route that hangs on every call, whose attempts always lose to a
//     hedge, does not open its breaker through them, and each request pays
//     the delay: a breaker learns only from attempts that end on their own
//     (a first-chunk timeout, retry.Config.Timeouts, shorter than the delay
//     ends them before a hedge is due, and counts).
//   - Streaming: attempts race to their first chunk; the first to deliver
//     one wins and the others are canceled at that moment. The caller sees
//     the winner's chunks and no other's, and once a chunk reached it
//     nothing is hedged any more: a failure of the winner is the request's.
//     A layer inside that holds chunks back (package validate with a schema)
//     makes the race one to the whole answer. The delay judges any progress:
//     once an attempt's stream shows one (a chunk, or a [portico.Progress]
//     report, such as reasoning the caller did not ask to see or a chunk
//     held back), no further hedge is sent, and the sketch learns the time
//     to that first sign (TestHedgeDelayJudgesProgress).
//
// [Hedger.Wrap] hedges to the same destination. Package fallback, with
// fallback.Config.Hedge, hedges to the next fitting route of a group,
// through the same race.
//
// # Cost
//
// A request the Hedger may not hedge costs a branch. One it may costs a
// clock read and no allocation while no hedge could be sent: the sketch
// holds fewer than 50 latencies and no Delay is set, or the delay ends
// after the request's deadline. Otherwise [Hedger.Run] races it over
// standard contexts and timers, as failsafe-go's hedge policy does: each
// attempt runs on a goroutine of its own under a context.WithCancelCause
// (the cause of a loser's end is that another attempt won), and the
// caller's goroutine receives their ends, with one timer for the next
// hedge. A race no hedge joins makes 12 allocations and starts one
// goroutine.
//
// # Where it goes
//
// Above everything that spends capacity: a same-route Hedger wraps the
// route outside its limiter and breaker (package stack, Route.Hedge), so
// each hedge is admitted, counted and refunded like any call, except that
// package ratelimit neither queues a hedge nor lets it wait for tokens
// (a hedge takes spare capacity only, never a first attempt's place), and
// the route's retry layer retries inside each attempt. A group's hedging
// (Config.Hedge in package stack) sits in the group, above the
// routes.
package hedge
