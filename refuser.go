package portico

import (
	"strconv"
)

// Refuser names the layer of this process that refused a call, so that a
// service answers its own callers by who said no, without reading
// messages: a [ClientLimit] refusal is the tenant's own ("your plan",
// HTTP 429), the others say the service or a provider behind it is
// saturated or unhealthy ("try later", HTTP 503). It is the
// [Error.RefusedBy] of the error, and [RefuserOf] reads it. The zero
// Refuser, NotRefused, is that of every error no layer made by refusing:
// a provider's answer, the caller's context, a request wrong on any route.
type Refuser uint8

// The Refusers.
const (
	// NotRefused: no layer of this process refused the call.
	NotRefused Refuser = iota
	// ClientLimit: the tenant's limiter (package ratelimit keyed by client,
	// the preset's Config.Client): its requests, tokens, in-flight cap or
	// queue, or a call larger than its token bucket.
	ClientLimit
	// RouteLimit: a route's limiter, the provider account's (the preset's
	// Route.Limiter): its requests, tokens, in-flight cap (the adaptive
	// concurrency cap included) or queue.
	RouteLimit
	// CircuitBreaker: the route's breaker is open, here or in another
	// instance, or half-open with its probes busy; or a router found no
	// route whose Health says available.
	CircuitBreaker
	// Cooldown: every route left was cooling down until the Retry-After it
	// (or its quota) announced (package fallback's Cooldowns).
	Cooldown
	// Throttle: client-side adaptive throttling (package throttle).
	Throttle
	// RetryBudget: a retry was due and the retry budget had no token for it
	// (package retry); the error keeps the failed attempt's class.
	RetryBudget
	// SpendBudget: the tenant's spend budget for a window is spent
	// (package spend); the error says which window and when it renews.
	SpendBudget
)

var refuserNames = [...]string{
	NotRefused:     "",
	ClientLimit:    "client_limit",
	RouteLimit:     "route_limit",
	CircuitBreaker: "breaker",
	Cooldown:       "cooldown",
	Throttle:       "throttle",
	RetryBudget:    "retry_budget",
	SpendBudget:    "spend_budget",
}

// String returns the Refuser's snake_case name ("client_limit"), used in
// messages, logs and metrics; "" for NotRefused.
func (r Refuser) String() string {
	if int(r) < len(refuserNames) {
		return refuserNames[r]
	}
	return "Refuser(" + strconv.Itoa(int(r)) + ")"
}

// RefuserOf returns the RefusedBy of the first [*Error] in err's tree
// (errors.As, as [ClassOf] reads the class), NotRefused when there is
// none: the layer that ended the call by refusing it. Where a layer wraps
// the errors of several attempts or routes, its own error says which
// refusal ended the call; errors.Is on a package's sentinel would also
// find a refusal of an earlier attempt that did not.
func RefuserOf(err error) Refuser {
	if e := first(err); e != nil {
		return e.RefusedBy
	}
	return NotRefused
}
