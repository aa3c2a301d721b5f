// Package stack builds Portico's recommended stack in one call, so that users
// need not learn the order of the layers. Every layer it uses stays usable
// alone; a stack is nothing but [portico.Chain] calls in this order,
// outermost first:
//
//	trace.Wrap                 (Config.Tracer)         one span per request
//	end-to-end deadline        (Config.Deadline, Contract.Deadline)
//	ratelimit, per client      (Config.ClientLimits)   who gets in, how much
//	fallback.Group             (more than one route)   which route, in order
//	  per route:
//	  ratelimit, per model     (Route.Limits)          provider feedback lands here
//	  breaker                  (Route.Breaker)         one outcome per call
//	  retry                    (Route.Retry)           the one layer that retries
//	  trace.WrapAttempt        (Config.Tracer)         one span per attempt
//	  validate                 (Route.Validate)        HTTP 200 is not success
//	  Route.Model              usually a provider adapter, SDK retries off
//
// Why this order: the deadline is set once, at entry (seed 003: record an
// absolute deadline at entry), outside the client limiter, so a wait for
// admission (ratelimit.Wait) is part of the budget and the limiter refuses at
// once a wait that cannot end before it; the client limit comes before any
// other work so a client in an error loop is refused cheaply; the deadline is
// outside fallback, so the fallback splits one budget between its candidates; the breaker sits
// outside retry so it sees one outcome per call, not one per attempt; validate
// sits inside retry (and inside the attempt span) so an invalid answer is one
// failed attempt, which fallback then moves away from; the per-model limiter is
// per route because a provider's limits are per model and account.
package stack
