package trace

import (
	"context"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Observe implements [portico.Observer] for one request: it records e as a span
// event on the span current in ctx (the request span, or an attempt span when
// the event happened inside an attempt), folds it into the request span's
// portico.* attributes, counts it in the metrics, and forwards it to any
// Observer that was in the context before the request layer installed this
// one. Request layers further out (Tracers around this one) only fold the
// event into their attributes, so that nothing is recorded twice.
func (c *call) Observe(ctx context.Context, e portico.Event) {
	c.fold(e)
	if c.recording {
		span := trace.SpanFromContext(ctx)
		if !span.IsRecording() {
			span = c.span
		}
		if name, attrs := eventAttrs(e); name != "" {
			span.AddEvent(name, trace.WithAttributes(attrs...))
		}
	}
	if c.metrics {
		c.t.inst.recordEvent(c.parent, e)
	}
	c.forward(e)
}

// fold records e in the call's figures, for the request span's attributes,
// the request metrics and the request log record.
func (c *call) fold(e portico.Event) {
	c.mu.Lock()
	switch e.Kind {
	case portico.EventRateLimitWait:
		c.rlWait += e.Delay
	case portico.EventRetry:
		c.retries++
		c.retryReason, c.retryDelay = e.Class, e.Delay
	case portico.EventBudgetExhausted:
		c.budgetOut = true
	case portico.EventFallback:
		c.fallbackSource, c.fallbackReason = e.Route, e.Reason
	case portico.EventBreakerState:
		c.breakerState = e.Reason
	case portico.EventValidation:
		c.validation = e.Reason
	}
	c.mu.Unlock()
}

// forward passes e outwards: every request layer around this one (a call
// installed as the Observer of its parent context) folds it in, and the first
// other Observer found receives it, with the context it was installed in
// (plus the request spans), once.
func (c *call) forward(e portico.Event) {
	ctx := c.parent
	for {
		o := portico.ObserverFromContext(ctx)
		if o == nil {
			return
		}
		outer, ok := o.(*call)
		if !ok {
			o.Observe(ctx, e)
			return
		}
		outer.fold(e)
		ctx = outer.parent
	}
}

// eventAttrs returns the span event name and attributes for e; an empty name
// means e makes no span event (an accepted validation, an unknown kind).
func eventAttrs(e portico.Event) (string, []attribute.KeyValue) {
	a := appendString(nil, KeyRoute, e.Route)
	switch e.Kind {
	case portico.EventRateLimitWait: // the reason: which bucket made the call wait
		return EventNameRateLimitWait, appendString(append(a, KeyRateLimitWait.Float64(e.Delay.Seconds())), KeyRateLimitReason, e.Reason)
	case portico.EventRateLimitReject:
		return EventNameRateLimitReject, append(a, KeyRateLimitReason.String(e.Reason), KeyRetryAfter.Float64(e.Delay.Seconds()))
	case portico.EventRetry:
		a = append(a, KeyAttemptIndex.Int(e.Attempt), KeyRetryReason.String(e.Class.String()),
			KeyRetryDelay.Float64(e.Delay.Seconds()))
		return EventNameRetry, appendString(a, KeyRetryDelaySource, e.Reason) // "backoff", "retry_after"
	case portico.EventBudgetExhausted:
		return EventNameBudgetExhausted, append(a, KeyRetryReason.String(e.Class.String()))
	case portico.EventFirstChunk:
		return EventNameLayerFirstChunk, append(a, KeyLayerTTFT.Float64(e.Delay.Seconds()))
	}
	return routeEventAttrs(e, a)
}

// routeEventAttrs is eventAttrs for the events about a route's choice and
// state (fallback, breaker, hedge, continue, shared store, cache, guard,
// validation); a holds the route attribute already.
func routeEventAttrs(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
	switch e.Kind {
	case portico.EventFallback:
		return EventNameFallback, append(a[:0], KeyFallbackSource.String(e.Route), KeyFallbackReason.String(e.Reason),
			KeyErrorType.String(e.Class.String()))
	case portico.EventBreakerState:
		return EventNameBreakerState, append(a, KeyBreakerState.String(e.Reason))
	case portico.EventHedge:
		if e.Reason == "sent" {
			a = append(a, KeyAttemptIndex.Int(e.Attempt), KeyHedgeDelay.Float64(e.Delay.Seconds()))
		}
		return EventNameHedge, append(a, KeyHedgeReason.String(e.Reason))
	case portico.EventContinue:
		return EventNameContinue, append(a, KeyAttemptIndex.Int(e.Attempt), KeyContinueForm.String(e.Reason))
	case portico.EventSharedStore:
		return EventNameSharedStore, append(a, KeySharedStore.String(e.Reason))
	case portico.EventCache:
		return EventNameCache, append(a, KeyCacheResult.String(e.Reason))
	case portico.EventGuard:
		return EventNameGuard, append(a[:0], KeyGuardrail.String(e.Route), KeyGuardResult.String(e.Reason))
	case portico.EventValidation:
		if e.Reason == "rejected" || e.Class == portico.InvalidResponse {
			return EventNameValidationReject, append(a, KeyValidationResult.String("rejected"), KeyErrorType.String(portico.InvalidResponse.String()))
		}
	}
	return "", nil
}
