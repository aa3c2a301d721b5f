// Package stack builds Portico's recommended stack in one call, so that users
// need not learn the order of the layers. It composes: each layer takes its
// own package's Config (a [ratelimit.Config] for the client limiter and for
// a route's, a [breaker.Config], a [retry.Config]...), and the stack fills
// only the fields that place the layer (a limiter's Key, a breaker's Name)
// when they are zero. Every layer it uses stays usable alone; a stack is
// nothing but [portico.Chain] calls in this order, outermost first:
//
//	trace.Wrap                 (Config.Tracer)         one span per request
//	response cache             (Config.Cache)          a hit spends nothing below
//	user middleware            (Config.Middleware)     a logger, a rewrite
//	end-to-end deadline        (Config.Deadline,       Request.Validate, the size
//	                            Contract.Deadline,     cap; the budget from here
//	                            Config.MaxRequestBytes)
//	ratelimit, per client      (Config.Client)         who gets in, how much
//	spend budgets              (Config.Spend)          the tenant's money per window
//	fallback.Group             (more than one route)   which route, in order;
//	                           (Config.Hedge)          hedges to the next route
//	  per route:
//	  user middleware          (Route.Middleware)      a per-route cache or logger
//	  models not served        (no Route.ModelName)    a remembered 404, no call
//	  hedge                    (Route.Hedge)           hedges to the route itself
//	  ratelimit, per model     (Route.Limiter)         provider feedback lands here;
//	                                                   Concurrency: an adaptive cap
//	  breaker                  (Route.Breaker)         one outcome per call
//	  retry                    (Route.Retry)           the one layer that retries
//	  trace.WrapAttempt        (Route.Trace)           one span per attempt
//	  validate                 (Route.Validate)        HTTP 200 is not success
//	  throttle                 (Route.Throttle)        client-side throttling
//	  a 404 for the model      (no Route.ModelName)    the request's, remembered
//	  user middleware          (Route.ModelMiddleware) around the provider alone
//	  Route.Model              usually a provider adapter, SDK retries off
//
// A route's part of that order is [Recipe]; a route whose Order is set
// arranges its [Layers] otherwise (a throttle outside retry, say) without
// a field for each placement, each non-nil layer once (New checks it). Route.Skip leaves out its breaker, retry or
// validate layer.
//
// Why this order: the deadline is set once, at entry (record an absolute
// deadline at entry and propagate it, as the Google SRE book's chapter
// "Addressing Cascading Failures" advises; it derives no context when the
// caller's deadline is the earlier, and none of its own when every layer
// down to the group reads it: it then carries the deadline to the group
// as a value, and the group derives each candidate's one context from the
// caller's with the earlier of its share's end and the deadline; a shared
// store's round trip or the in-flight cap's wait above the group gets a
// deadline context as before), outside the client limiter, so a wait for admission
// (ratelimit.Wait) is part of the budget and the limiter refuses at once a
// wait that cannot end before it; the client limit comes before
// any other work so a client in an error loop is refused cheaply; the
// response cache comes before all of them, so a hit takes no token, budget
// or time; spend budgets come after the client limit, so a call the limit
// refuses reserves nothing, and outside the routes, so they settle the
// whole cost of a request (Response.Cost: its answer, billed failures, a
// losing hedge); the
// deadline is outside fallback, so the fallback splits one budget between
// its candidates; the breaker sits outside retry so it sees one outcome per
// call, not one per attempt; validate sits inside retry (and inside the
// attempt span) so an invalid answer is one failed attempt, which fallback
// then moves away from; the per-model limiter is per route because a
// provider's limits are per model and account.
//
// Hedging, an adaptive in-flight cap (Route.Limiter.Concurrency, package
// adaptive's Limit) and client-side throttling are off unless their fields
// are set: a hedge bills a second call (hedging suits
// latency-critical work that may be paid twice), an adaptive cap and a
// throttle refuse calls a fixed configuration would have sent. Where they
// sit: a hedge is above everything that spends capacity, so each hedge is
// admitted, limited, counted by the breaker and retried like any call, and
// charged to the retry budget of the route it goes to; the adaptive cap is
// the per-model limiter's own (one in-flight count, its queue and shedding);
// the throttle is next to the provider, inside retry, so that every attempt
// is a request it counts, and inside validate, so that an answer the
// schema refuses is not taken for the destination's refusal.
//
// # Priorities
//
// A request's [portico.Priority] (Critical, Default, Sheddable) needs no
// stack field: every layer that sheds or queues reads it from the
// request. The limiters' queues (Client.Queue, Route.Limiter.Queue) serve
// the highest priority first and shed the lowest when full, their
// Reserve keeps slots for higher priorities, a route's throttle rejects
// Sheddable calls first, and Config.InFlight's Reserve keeps a tenant's
// slots across instances for its Critical calls. At 2x overload (a route
// of 10 slots, 20 requests a second, a quarter of them Critical) the
// Critical requests' goodput goes from 57% to 100% behind a queue of 10
// (p50 1.86 s to 1.14 s, p99 2.47 s to 1.82 s, service 0.5-1.5 s), and
// from 47% to 89% behind the cap alone with a Reserve of 2; a throttle
// alone, before a destination that does not know the priorities, moves it
// from 47% to 51% only (TestPriorityFigure).
//
// # When a route fails
//
// One route or several, a request is filtered by the routes'
// Capabilities ([portico.Capabilities.Fits]) before any is called: tools
// on a route without them, or a prompt longer than its window, are
// refused without a call (Incompatible, wrapping a [fallback.Exhausted]
// that names the unmet need), with one route as with two.
// With several routes, what fails is sorted by whose fault it is. A request
// wrong on any route ([portico.Request.Validate]: no messages, a malformed
// Contract, a negative MaxOutputTokens; a request above
// Config.MaxRequestBytes, 64 MiB by default; or a schema validate cannot
// compile) fails at once, and no provider is called; one above a route's
// Capabilities.MaxRequestBytes is Incompatible there. A request one
// provider refuses (its 400 or 422, its x-should-retry: false) is that
// route's only: the adapters classify it Incompatible, so it is not retried
// there, the group moves on to the next route that fits, and the breaker
// does not count it, but for a 5xx or 429 advised not to be retried, which
// it counts in its run of consecutive failures only
// ([portico.ErrUnanswered]): a route that answers nothing else opens after
// five in a row. A route that cannot serve now (a 401 or
// 403 of its key, a 404 of its model, a spent quota: Unusable) is called
// once, not retried; the group moves on to the next route and the route's
// breaker opens at once, so later requests skip it until a probe succeeds.
// Set Config.Fallback.StopOnUnusable to return such errors instead.
// The exception is a 404 on a route without a ModelName for a request that
// names its model (Request.Model): the route cannot serve that model (another
// provider's name, a typo), which is not a fault of the route, so the error
// becomes Incompatible, the group moves on and the breaker does not count it.
// The route remembers such a model for 5 minutes (256 models at most) and
// refuses it meanwhile without a call (NotSent), so 20 requests naming it
// cost the route one round trip, not 20.
// The same holds for answers validate refuses because of the request (a
// content filter, a cut at the request's MaxOutputTokens: see package
// validate, Rejections): only an answer that is wrong counts against a route.
//
// A route that hangs, answering nothing, is cut at the end of its share
// of the deadline (fallback.Config.Share: 9/16 while another route could
// follow), and the group moves on. Its breaker opens after five such
// requests in a row with no answer between, whatever the deadline: past
// fallback.Config.FaultAfter (10 s) each cut is a failure, and a shorter
// one, which may be no more than the caller's short deadline, counts in the
// breaker's run of consecutive failures only ([portico.ErrUnanswered]), so
// a healthy route that answers other callers is never opened by one
// caller's deadlines. Over a hung primary and a healthy secondary, with the
// defaults, the first five requests wait the primary's share (562.5 ms of
// a 1 s deadline, 5.625 s of 10 s, 67.5 s of 2 min) and every later one is
// answered by the secondary at once. The last route's cut, all the time the
// caller gave, is the caller's deadline and counts for nothing. A stream's
// share bounds only the gaps between its signs of progress (a chunk, or
// any event the adapter reports with [portico.Progress], such as a
// reasoning model's): a live stream, however long it thinks and however
// long its answer, runs to the end of the deadline, and one that falls
// silent for its share is cut and counted as a hung route is, the group
// moving on unless a chunk already reached the caller.
//
// A route that answers 429 with a Retry-After longer than
// Config.Fallback.WaitInPlace (500 ms) while another route could serve the
// request is left at once rather than waited for; it is then skipped
// without a call until its Retry-After, and its breaker does not probe it
// earlier. Routes behind one key or account should say so with the same
// Capabilities.Quota, and cool down together (when only routes of that
// quota are left, the group waits for its Retry-After within the deadline,
// as one route would, rather than fail at once); Config.Fallback.Cooldowns
// shares the cooldowns with other stacks (or, with package redisstore's
// Cooldowns, every instance of the service), and Route.Breaker.Shared set
// to the same store makes a breaker that trips on one instance open
// everyone's. When no route takes calls, the error's RetryAfter
// ([portico.RetryAfterOf]) says when the first will.
//
// # Routers, splits and model groups
//
// Config.Kind says how the routes are chosen (nil: the fallback group in
// order): [Weighted] splits requests at random in its weights'
// proportions (7:3 sends 70% and 30%, and a fallback or a hedge goes on
// to the rest in the same proportions); [Threshold] is RouteLLM's
// router over a weak and a strong route; [Cascade] is FrugalGPT's
// cascade with each step's acceptance scorer; [Balance] spreads calls
// over replicas (round robin, least in flight, session affinity,
// prefix-aware E2), each package route's own, built over the routes with
// their layers. Behind a router's pick stands the group's fallback: the
// picked route first, the others in their order. Config.Groups are
// model groups: Request.Model names a group ("fast", "smart"), or an
// alias of one (Config.Aliases), and the request goes to that group's
// routes with its Model cleared; a route may serve in several groups
// and is one route in all (one breaker, one limiter), and the groups
// share one Cooldowns.
//
// A key pool ([Pool]) is one model behind several API keys or
// deployments: a [Weighted] group of one route per [Key], named
// pool/label, each with its own breaker (a 401/402/403 opens it; a 429
// does not), cooldown to its Retry-After, limiter learning the key's
// x-ratelimit headers and retry budget, so that a key out of quota or
// revoked is skipped and the others serve. Each key's Name, Destination
// and Shared.Name are left empty so that they are its route's; its
// cooldown is keyed by the key's Quota or route and shared across
// instances with redisstore's Cooldowns; a 401/402/403 key (Unusable)
// opens its breaker at once and is not called until a probe succeeds.
// When every key is out the group fails RateLimited with the earliest
// Retry-After any key announced, or Rejected by the breakers
// (fallback.Exhausted lists each key's reason). A Weighted group weighs each
// route by its limiter's headroom too ([ratelimit.Limiter.Headroom]), so
// a key whose headers report its limits nearly used gets less of the
// traffic before it answers 429.
//
// Config.Probe starts a prober ([Probe]; [Stack.Close] stops it) that
// calls idle routes and routes whose breaker is not closed, so a revoked
// key is found before an outage needs it and a healed route closes again.
//
// # Live changes
//
// [Stack.Update] swaps in a new Config at run time: routes added or
// removed, weights, kinds and groups changed, limits raised or tightened.
// A configuration is immutable once built; the Stack holds the one in
// force behind an atomic pointer, so a call loads it once, on entry, and
// runs to its end on it, and a route removed while calls are in flight
// drains on the old configuration, which is dropped when its last call
// ends. What a route has learnt stays with its Name: a route of the new
// Config named as one in force keeps its limiter (its bucket levels and
// calls in flight, new limits set on the same buckets), breaker (open
// stays open), retry budget and throttle, whichever layer's Config is
// unchanged, and the group keeps its Cooldowns; the routers and groups are
// built anew, as the weights may have changed. A Config that New would
// refuse is refused as a whole, and the old one serves on. The prober
// follows the configuration: the old one's stops when the new one is in.
//
// A route keeps its limiter, breaker, retrier (so its retry budget),
// throttle and the models it remembers not serving whatever its Model (a
// new adapter, a rotated key: give it a new Name to start afresh), as the
// client limiter, the in-flight caps, the spend budgets, the response
// cache, the guards and the group's Cooldowns (when
// Config.Fallback.Cooldowns is nil) are kept. A layer is kept when its
// Config is the same as before, compared field by field, pointers and
// stores by identity and functions by their code: what a closure captured
// is not seen, so breaker.ConsecutiveFailures(2) and (5) are the same Trip
// (to change one, give the route a new Name). A limiter whose Config
// differs only in its Limits or its Tiers' limits is kept too, the new
// limits set on it as [ratelimit.Limiter.SetLimit] and SetTierLimit set
// them (each bucket keeps its level, capped at its new capacity). A layer
// whose Config changed otherwise, a route's same-route hedger (it keeps no
// state, and prices hedges with the route's Capabilities), the groups and
// the routers start afresh (TestUpdateHedgerPricesWithNewCapabilities).
//
// # The user's own layers
//
// The three Middleware fields put the user's layers where each kind
// belongs. Config.Middleware wraps the whole stack inside the request span,
// so its work is traced, and outside the deadline and limits, so a cache
// hit spends neither and a layer may still set the request's
// Contract.Deadline. Route.Middleware wraps one route outside its limiter
// and breaker: it sees each call the group places on the route once, before
// anything is spent, and its failures move the group on without tripping
// the breaker. Route.ModelMiddleware wraps the provider alone, inside
// validate and retry: it sees every attempt, and what it returns is
// validated, retried and counted like the provider's own answer.
//
// # What it built, and traces per route
//
// A [Stack] gives access to the layers it built: [Stack.ClientLimiter] and
// [Stack.Limiter] (Keys, SetLimit on the live limiters), [Stack.Breaker],
// [Stack.Retrier], [Stack.Hedger], [Stack.Throttle]. With Config.Tracer, each route's attempt layer is the
// Tracer's [trace.Tracer.ForRoute] for Route.Trace, so attempt spans carry
// their route (portico.route) and provider, and a request answered by the
// fallback carries the fallback's gen_ai.provider.name, server.address and
// model on its span, not the primary's.
package stack
