package adapt

import "github.com/portico-llm/portico"

// Refused is the class of a request a provider refused (a 400, 422 or other
// 4xx, an invalid_request_error event) for a reason the adapter's table does
// not name otherwise: Incompatible, this request on this route. A provider
// judges the body its own adapter made, in its own dialect: a system-only
// conversation Anthropic refuses, OpenAI serves; Groq's tool_use_failed is
// its model's, another model may call the tool. So a provider's refusal is
// never Permanent ("wrong on every route"): the request moves on to the next
// route that fits, is not retried on this one, and no breaker counts it.
// Permanent is what Portico itself proves before sending
// (portico.Request.Validate, a request no adapter can encode); no wording
// the adapters read proves a request wrong on every provider, and one that
// did would be named in its adapter's table.
const Refused = portico.Incompatible

// NoRetry applies a provider's x-should-retry: false to the class c,
// reason and cause of its failure: advice about this request, which alone
// is no verdict on the route. A class that would be retried (Transient,
// RateLimited) becomes Incompatible, so the request is not retried on
// this route and moves on to the next, and cause is marked
// [portico.UnansweredRefusal]: a breaker counts it only in its run of
// consecutive failures, so one such answer trips nothing (it opened the
// breaker for every tenant when it was Unusable) and a route that answers
// every request so opens after a run (DefaultTrip's 5 in a row) instead of
// costing each request a round trip for ever. The reason gets
// " (x-should-retry: false)". Other classes keep theirs, their reason and
// cause: a 4xx is the request's, as without the header.
func NoRetry(c portico.Class, reason string, cause error) (portico.Class, string, error) {
	if c.Retryable() {
		return portico.Incompatible, reason + " (x-should-retry: false)", portico.UnansweredRefusal(cause)
	}
	return c, reason, cause
}

// ShouldRetry applies a provider's x-should-retry header v to the class c,
// reason and cause of its failure: "false" as [NoRetry]; "true" makes c
// Transient, its reason marked, when promote (the adapter's judgement that
// the header may override c); any other value changes nothing.
func ShouldRetry(v string, promote bool, c portico.Class, reason string, cause error) (portico.Class, string, error) {
	switch {
	case v == "false":
		return NoRetry(c, reason, cause)
	case v == "true" && promote:
		return portico.Transient, reason + " (x-should-retry: true)", cause
	}
	return c, reason, cause
}
