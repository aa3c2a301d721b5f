package portico

import (
	"context"
	"sync/atomic"
	"time"
)

// EventKind says what an [Event] reports.
type EventKind uint8

// The events layers report. Each names the layer that emits it.
const (
	// EventRateLimitWait: a rate limiter made the call wait Delay before admitting
	// it (package ratelimit).
	EventRateLimitWait EventKind = iota + 1
	// EventRateLimitReject: a rate limiter or in-flight cap refused the call;
	// Reason says which, Delay is the Retry-After it announced.
	EventRateLimitReject
	// EventRetry: a retry layer scheduled attempt Attempt after a failure of class
	// Class, to start after Delay (package retry).
	EventRetry
	// EventBudgetExhausted: a retry layer wanted to retry but a retry budget was
	// empty; Reason says which, "client" or "destination" (package retry).
	EventBudgetExhausted
	// EventFirstChunk: the first chunk of a streamed answer reached this layer,
	// Delay after the layer received the request (TTFT as seen there).
	EventFirstChunk
	// EventFallback: a fallback, router or cascade left Route for the reason Reason
	// (class Class) and moves on (package fallback, package route).
	EventFallback
	// EventBreakerState: a breaker moved to state Reason ("open", "half_open",
	// "closed") for Route (package breaker); when opening, Delay is the open
	// interval and Class the class of the failure that tripped it.
	EventBreakerState
	// EventValidation: the acceptance pipeline judged the answer; Reason is
	// "accepted" or "rejected", and on rejection Class is InvalidResponse
	// (package validate).
	EventValidation
	// EventHedge: a hedging layer sent hedge Attempt to Route, Delay after
	// the attempt before it (Reason "sent"), or did not because the retry
	// budget was empty (Reason "budget", package hedge) or the hedge could
	// cost more than Contract.MaxCost allows (Reason "max cost", package
	// fallback, or package hedge with a Config.Cost).
	EventHedge
	// EventContinue: a fallback group sent Route the delivered text of a
	// stream that broke, to continue it; Attempt is the continuation's number
	// (1 for the first), Reason its form ("prefill" or "instruct") (package
	// fallback).
	EventContinue
	// EventSharedStore: a layer could not reach the store it shares with
	// other processes (package redisstore, or any other implementation of
	// the layer's store interface) and decided the call without it. Reason
	// is "<layer>:fail_open" (decided on local state: ratelimit's buckets
	// scaled to 1/N, retry's local budgets, fallback's cooldowns of this
	// process) or "<layer>:fail_closed" (the call or retry refused), the
	// layer one of "ratelimit", "retry", "effect", "fallback", "spend"; Class is
	// Transient. Reason "effect:ran_twice" (Class Ambiguous): a Runner
	// writing back after the store lost records found the step run again.
	EventSharedStore
	// EventCache: a response cache looked the request up (package
	// respcache); Reason is "hit" (answered from the cache, no call made)
	// or "miss" (called below, the answer cached if it may be).
	EventCache
	// EventGuard: an input guardrail ran (package guard); Route is the
	// guardrail's name, Reason "pass", "refused", or "fail_open:<kind>" /
	// "fail_closed:<kind>" when its check failed (kind "error", "panic",
	// "timeout").
	EventGuard
)

var eventNames = [...]string{
	EventRateLimitWait:   "rate_limit_wait",
	EventRateLimitReject: "rate_limit_reject",
	EventRetry:           "retry",
	EventBudgetExhausted: "budget_exhausted",
	EventFirstChunk:      "first_chunk",
	EventFallback:        "fallback",
	EventBreakerState:    "breaker_state",
	EventValidation:      "validation",
	EventHedge:           "hedge",
	EventContinue:        "continue",
	EventSharedStore:     "shared_store",
	EventCache:           "cache",
	EventGuard:           "guard",
}

// String returns the event's snake_case name ("rate_limit_wait").
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "EventKind(?)"
}

// Event is one thing a layer did to a call, reported to the [Observer] in the
// call's context. Fields that do not apply to a Kind are zero. Events carry no
// prompt or answer content.
type Event struct {
	Kind    EventKind
	Route   string        // the route concerned, when the layer knows it
	Attempt int           // attempt index (EventRetry: the attempt being scheduled)
	Class   Class         // the error class that caused the event, if any
	Delay   time.Duration // wait, backoff delay, Retry-After or TTFT, per Kind
	Reason  string        // short, content-free detail per Kind
}

// Observer receives the events that layers report for calls whose context carries
// it (see [ContextWithObserver]). Package trace implements it to turn events into
// span events, metrics and logs; layers need not import trace. Observe is called
// synchronously on the call's goroutine, never under a layer's lock, and must be
// quick and safe for concurrent use.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

type observerKey struct{}

// observed records that a context carrying an Observer was ever made, so
// that a process that installs none pays one load per event, not a lookup
// through every context of the request.
var observed atomic.Bool

// ContextWithObserver returns a copy of ctx whose calls report their events to o.
// An outer layer (package trace) installs it once per request.
func ContextWithObserver(ctx context.Context, o Observer) context.Context {
	if !observed.Load() {
		observed.Store(true)
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// ObserverFromContext returns the Observer ctx carries, or nil. A layer that
// installs its own Observer (package trace) uses it to forward events to the one
// already there.
func ObserverFromContext(ctx context.Context) Observer {
	if !observed.Load() {
		return nil
	}
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

// Observe reports e to the Observer in ctx, if any; without one it does nothing.
// Layers call it mostly off the happy path (a wait, a retry, a fallback); package
// validate, which reports every verdict, also calls it for accepted answers. Its
// cost without an Observer is one context lookup, and one atomic load in a
// process that never installed one.
func Observe(ctx context.Context, e Event) {
	if !observed.Load() {
		return
	}
	if o, ok := ctx.Value(observerKey{}).(Observer); ok {
		o.Observe(ctx, e)
	}
}
