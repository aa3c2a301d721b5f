// Package fallback answers a request with the first of an ordered group of
// routes that can serve it and keep its contract: a fallback answers
// availability, not difficulty (for difficulty, see package route's
// cascade). Fallbacks are chosen by capability, and a route whose breaker is
// open is skipped at once (see docs/SEEDS.md, 000 and 003, for the notes
// this follows).
//
// # Filter, then rank, then try
//
// A [Group] holds [portico.Route]s in order of preference. For each request it
//
//   - filters: a route is a candidate only when [portico.Capabilities.Fits]
//     accepts the request (modalities, context window >= estimated input +
//     MaxOutputTokens, max output, tools, schema mode, model class, estimated
//     cost <= Contract.MaxCost), it is not cooling down after a Retry-After
//     (see below), the route is Available (its breaker, see package breaker,
//     is not open), its estimated cost fits the contract's remaining budget,
//     and it fails independently of the primary when Config.Independence
//     asks for it. Models are not interchangeable (tokenizer, context
//     length, tool format), so a fallback is chosen by capability, not by
//     rank. A request that Fits finds wrong on any route (its Permanent
//     error: a malformed Contract, a negative token count) stops at once
//     with that error, and no route is called;
//   - ranks: in configured order by default, examined lazily so a first-route
//     success without a deadline costs one filter check and one allocation,
//     the context that carries the route's cooldown (under a deadline, the
//     group also looks for a next candidate to size the share, and bounds
//     the call with a context that carries it); or by a
//     [rank.Policy], the vocabulary package route shares: [rank.ByHealth]
//     (routes that failed in the last minute last), [rank.ByLatency]
//     (smoothed latency of successes, as RFC 6298's SRTT), [rank.ByCost]
//     (estimated cost), or one's own over the same [rank.Candidate] fields;
//   - tries each candidate in turn, and moves on only when another route can
//     help: transient and rate-limited failures (after the route's own
//     retries), a route that cannot serve now (Unusable: its key, its
//     deployment, its quota), rejections (an open breaker, a limiter: the
//     group never queues), incompatibility (a context overflow on an 8k
//     route skips the other 8k routes), invalid responses, a candidate's own
//     timeout. It never falls back on a permanent client error, on the
//     caller's cancellation, or once a chunk of a streamed answer reached
//     the caller, unless the request asks to continue broken streams (see
//     Continuation).
//
// # The deadline is split
//
// When the context has a deadline (or the request's Contract sets one, which
// first bounds the context), the remaining time is split across candidates,
// as in this example of 8 s: 300 ms reserved for the gateway and validation
// ([DefaultReserve]), 4.5 s for the primary ([DefaultShare] = 9/16 of the
// remaining time), and what is left, 3.2 s, for the fallback. Every candidate but the last that could run gets
// Config.Share of the time remaining when it starts; the last gets all but the
// reserve. The default reserve scales with the deadline: the smaller of 300 ms
// and 1/16 of the time left when the request enters the group, so a 500 ms
// deadline keeps 31.25 ms back, and its fallback still gets ~190 ms after a
// stalled primary's 281 ms rather than nothing. A fallback (a candidate
// after a call, or a hedge) is not started when its allowance is below
// Config.MinAttempt: the request then ends with a Deadline error rather than
// an attempt that cannot finish. The first call always is, with all the
// time the caller's deadline leaves when its allowance is shorter, as it
// would be with no route to fall back on.
//
// A stream's share bounds the gaps between its signs of progress, not the
// whole answer: while another candidate follows, a streamed candidate runs
// on to the end of the time before the reserve as long as no gap between
// its signs of progress (a chunk, or a progress report, [portico.Progress]:
// a chunk a layer holds back, an event that is not text, such as a
// reasoning model's), counted from the call's start, lasts its share. The
// time the caller's OnChunk holds a chunk (a slow client) is no gap. One
// silent for its whole share is cut then, as any candidate, and so is one
// that falls silent that long later: before a chunk reached the caller the
// group moves on, after it the request fails, for the caller has text.
// Either cut has the share's cause, so the route's breaker counts a stream
// that falls silent as one that never began; a live stream, however long
// it thinks or answers, runs to the end of the time before the reserve, a
// cut of the caller's time as the last candidate's. No chunk reaches the
// caller after a cut, and an answer the route gives past it is not the
// request's. The bound costs such an attempt a timer and a cancelable
// context. (A raced request's streams, under Config.Hedge, keep their
// share as a bound on the whole.)
//
// A candidate's own share ends its context with cause [ErrShareTimeout],
// which matches [portico.ErrLayerTimeout]: the route sees the group's
// timeout, not the caller's deadline, and reports it as Ambiguous (sent) or
// Transient (not sent), so its breaker counts it. A hung primary thus trips
// its breaker after a few requests and is then skipped at once, instead of
// taking 9/16 of every request's deadline. A cut after less than
// Config.FaultAfter (10 s) may be only the caller's short deadline: its
// cause also matches [portico.ErrDeadlineCut]. The last candidate's is all
// the caller gave it, and breakers ignore it. One while another candidate
// followed is an unanswered cut ([portico.ErrUnanswered]): alone it says
// nothing, but a route that answers none of five calls in a row is hung
// or far too slow for every caller, so a breaker counts such cuts in its
// run of consecutive failures (never in its failure rate), and any answer
// ends the run. A hung primary thus opens its breaker after five requests
// whatever the deadline (1 s, 10 s or 2 min: the stack's
// TestPresetCutsAHungPrimary), while a tenant whose deadlines are shorter
// than a healthy route's latency cannot open it for the tenants it
// answers. The group moves on after a share
// timeout whatever the route's class, even Ambiguous on a request that sets
// NoAmbiguousRetry (the split exists to reach the fallback after a stalled
// primary), but stops when the caller's own deadline ends.
//
// # When it moves on
//
// After a failure of class Transient or RateLimited (the route's own retry
// layer has given up), Unusable (the route's credentials, model or quota: a
// fault of the route, not of the request, which another route may serve;
// Config.StopOnUnusable stops there instead), Rejected (a breaker open, a
// limiter refusing: the group never queues), Incompatible, InvalidResponse
// (as is a route that returns neither answer nor error,
// [portico.ErrNilResponse]), Deadline while the caller's deadline holds,
// and Ambiguous unless the request sets NoAmbiguousRetry. A context overflow (Code "context_length_exceeded" or Reason
// "context window") teaches the group that the input needs a larger window
// than the failed route's, so routes of that size are skipped too. The
// contract's MaxCost counts what failed calls were billed (any whose error
// carries Usage, at that usage's cost) or likely billed (InvalidResponse and
// Ambiguous ones without it, at their estimate).
//
// # Rate limits: move on now, come back when told
//
// A route that answers 429 with Retry-After: 5 while another candidate
// could serve the request is left at once: waiting 5 s in place costs more
// than a switch. Under a deadline the group gives such a candidate (one
// another candidate follows) a context carrying Config.WaitInPlace
// ([portico.ContextWithMaxWait], 500 ms by default), and the route's retry
// layer ends the call at once on a longer Retry-After instead of waiting;
// the last candidate gets none, and waits as it would alone.
//
// The route then cools down: a failure that carries a Retry-After the
// route announced (a route fault with RetryAfter set and not NotSent, so
// not a local limiter's refusal) is recorded in Config.Cooldowns, and the
// route is skipped without a call (hop reason "cooldown") until it ends,
// Config.MaxCooldown (5 min) at most after the failure.
// The key is the route's Capabilities.Quota, or its Name: routes that
// declare one Quota (two deployments behind one key) cool down together.
// The store is a [portico.Cooldowns]: [MemoryCooldowns], the group's own by
// default, or one shared by the groups of a process or by the instances of
// a service (package redisstore's, over Redis: a [SharedCooldowns], whose
// requests decided while it is out of reach are each reported as a
// [portico.EventSharedStore]). Package breaker, for its part, keeps an open
// breaker from probing before the Retry-After.
//
// When the only candidates left share the quota a route of this request
// just cooled down, none can serve before its Retry-After, and the
// WaitInPlace cap that made the route fail at once assumed another could:
// the group then behaves as that route alone would have, under a deadline.
// It waits until the cooldown ends and calls the next candidate of the
// quota when the wait leaves it the reserve and MinAttempt; otherwise it
// fails at once, with the hint as RetryAfter.
//
// # What the caller learns
//
// [portico.Response].Route names the route that answered and Response.Hops
// lists every route left before it, with a content-free reason ("transient",
// "unavailable", "context window", "timeout", ...) and its error. Each hop is
// also reported to the context's [portico.Observer] as a
// [portico.EventFallback]. Response.Cost is what the request cost: the
// answering route's cost plus, for each route left with an error that
// carries the usage it billed ([portico.Error].Usage: an answer package
// validate refused, say), that route's price for it. When every route is left, the error is a classified
// [*portico.Error] whose Err is an [*Exhausted] listing every hop; errors.Is
// finds [ErrExhausted] and each route's own error. When no route was called
// (each filtered out, unavailable or out of time) its message says that no
// route can serve the request and names each route's unmet need. Its Class
// is the highest-ranked among the hops, in the order Ambiguous > Transient >
// Deadline > InvalidResponse > RateLimited > Rejected > Unusable >
// Incompatible, where a route skipped unasked counts as RateLimited when
// cooling down, Rejected when unavailable, Deadline when no time was left
// for it, and Incompatible otherwise. So a possibly billed call is never
// hidden; a route fault says retry later with backoff; Deadline says more
// time could have helped; RateLimited and Rejected say come back later,
// with as RetryAfter what is left, when the group returns, of the least of
// the hops' hints and of the times until a route skipped as cooling or
// unavailable takes calls again (its cooldown, its
// [portico.Health].RetryAfter), 0 once that time has passed; Unusable says no route can serve now,
// nor will by itself; Incompatible is returned only when nothing could
// serve the request as it is. If the
// caller's context is done when the group gives up, the class is the
// context's (Canceled or Deadline), unless a hop was Ambiguous.
//
// When the group stops at an error that forbids falling back (a permanent
// client error, say) after leaving other routes, the error keeps that route's
// class and fields and its Err is a Stopped [*Exhausted] with the same list,
// so a failed request, too, says why each earlier route was left; when no
// route was left before it, the route's error is returned unchanged.
//
// # Hedging
//
// With Config.Hedge, a request the [hedge.Hedger] may hedge (one that may
// be sent twice) runs as its race ([hedge.Hedger.Run]): the first candidate
// at once and, when it has not answered after the Hedger's delay (a fixed
// one, or a percentile of that route's latency, which the group learns
// per route), the next candidate that passes the filter as a hedge,
// charged to the Hedger's budget and given its share of the deadline as it
// starts; at most the Hedger's MaxInFlight run at once. The first answer
// wins (for a streamed request, the first chunk to reach the caller, which
// sees that route's chunks only) and the others are canceled, each a hop
// with Reason "hedge lost" (a hedge the winner's answer or first chunk
// overtook before it was sent is none). A failure is judged as above: one that moves
// on waits for the attempts still running, or starts the next candidate
// when none is; one that stops ends the race. A hedge that finds no time,
// or no token in the budget, or whose estimate, with those of the attempts
// running and what failed ones were likely billed, exceeds Contract.MaxCost
// (an [portico.EventHedge] with Reason "max cost"), is not sent, and the
// running attempt goes on. A streamed request that sets
// [portico.Request.ContinueOnBreak] is not raced: a race delivers one
// route's chunks and cannot continue them, so its candidates are tried one
// after the other.
//
// # Continuation
//
// A stream that breaks after chunks reached the caller (a cut connection,
// an error event, a retry layer's gap timeout or rate floor) is by default
// the call's error: the caller has part of an answer. A request that sets
// [portico.Request.ContinueOnBreak] is continued instead, when the break is
// one the group would move on from before the first chunk. The group sends
// the delivered text, its trailing white space removed, to the next
// candidate that can continue ([portico.Capabilities.Continuation]; the
// others are skipped, reason "continuation"), or when none after it can, to
// the route that broke, once per break: as a prefill, the start of the
// assistant's answer (Anthropic; OpenAI-compatible servers that continue a
// trailing assistant message, see provider/openai's Config.Prefill), or
// followed by [portico.ContinueInstruction] (OpenAI's own API). The
// request's MaxOutputTokens is lowered by the delivered text's estimate.
//
// The caller receives only the new text, joined to what it has by a
// [portico.Seam]: a continuation that repeats the delivered text, or a tail
// of it, has the repetition dropped; one that starts the answer over and
// contradicts it is refused (InvalidResponse wrapping [portico.ErrRestart],
// none of it delivered) and the next candidate is tried. The Seam holds the
// continuation's first chunks back until it can decide, usually its first.
// Validation still judges the whole answer: package validate judges the
// prefix joined to a continuation's text. The Response is the whole: its
// Text the delivered text and the continuation's; its Usage the sum of
// every attempt's, where a broken attempt that reported none (a cut stream
// reports none) counts its estimate (its request's input, and the
// delivered bytes / 4 as output); its Cost each attempt's usage at its own
// route's prices. The hop of a route that broke has the Chunks and Bytes it
// delivered; the route that continued is the next hop's, or Response.Route;
// each continuation is reported as a [portico.EventContinue]. At most
// Config.Continuations breaks (2) are continued in one answer.
//
// The trade-offs: the prefix is billed again as input on every
// continuation (prompt caching softens it where the provider has it); a
// continuation on another model can change style mid-answer, and a break
// inside a word leaves the model to finish it from a tokenization it would
// not have chosen; the instruction form depends on the model following it,
// and the Seam only catches repetitions and restarts, not a preamble. A
// break after a tool call's chunk, or after the caller's OnChunk failed, is
// not continued; nor are answers an inner layer held back (validate
// buffering a structured answer), which are retried whole. Continuation is
// off by default, per request and per route.
//
// # Where it goes
//
// In the recommended stack the group sits below the end-to-end deadline and
// above the routes; each route's Model is its own stack (per-model rate limit,
// breaker, retry, validate, provider), and its Health is its breaker. A Group
// is itself a [portico.Model], so groups nest.
package fallback
