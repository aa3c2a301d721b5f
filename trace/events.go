package trace

import (
	"context"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
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
	if r := ruleOf(e.Kind); r.fold != nil {
		c.mu.Lock()
		r.fold(c, e)
		c.mu.Unlock()
	}
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
	r := ruleOf(e.Kind)
	if r.span == nil {
		return "", nil
	}
	return r.span(e, appendString(nil, KeyRoute, e.Route))
}

// eventRule is what the request layer makes of an event of one kind: its
// span event, from the route attribute a (name "": none), the metric it
// counts, and what it folds into the call's figures (under the call's
// lock). A nil func does nothing.
type eventRule struct {
	span   func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue)
	record func(ctx context.Context, i *instruments, e portico.Event)
	fold   func(c *call, e portico.Event)
}

// ruleOf returns the rule of kind k; an unknown kind has none.
func ruleOf(k portico.EventKind) *eventRule {
	if int(k) < len(eventRules) {
		return &eventRules[k]
	}
	return &eventRules[0]
}

// rejected reports whether a validation event is a rejection.
func rejected(e portico.Event) bool {
	return e.Reason == "rejected" || e.Class == portico.InvalidResponse
}

// eventRules holds, per kind, the one place each event's span event, metric
// and figures are written.
var eventRules = [...]eventRule{
	portico.EventRateLimitWait: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) { // the reason: which bucket made the call wait
			return EventNameRateLimitWait, appendString(append(a, KeyRateLimitWait.Float64(e.Delay.Seconds())), KeyRateLimitReason, e.Reason)
		},
		record: func(ctx context.Context, i *instruments, e portico.Event) { i.rlWait.Record(ctx, e.Delay.Seconds()) },
		fold:   func(c *call, e portico.Event) { c.rlWait += e.Delay },
	},
	portico.EventRateLimitReject: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameRateLimitReject, append(a, KeyRateLimitReason.String(e.Reason), KeyRetryAfter.Float64(e.Delay.Seconds()))
		},
		record: func(ctx context.Context, i *instruments, e portico.Event) {
			i.rlRejects.Add(ctx, 1, metric.WithAttributes(KeyRateLimitReason.String(e.Reason)))
		},
	},
	portico.EventRetry: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			a = append(a, KeyAttemptIndex.Int(e.Attempt), KeyRetryReason.String(e.Class.String()), KeyRetryDelay.Float64(e.Delay.Seconds()))
			return EventNameRetry, appendString(a, KeyRetryDelaySource, e.Reason) // "backoff", "retry_after"
		},
		record: func(ctx context.Context, i *instruments, e portico.Event) {
			i.retries.Add(ctx, 1, metric.WithAttributes(KeyRetryReason.String(e.Class.String())))
		},
		fold: func(c *call, e portico.Event) { c.retries++; c.retryReason, c.retryDelay = e.Class, e.Delay },
	},
	portico.EventBudgetExhausted: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameBudgetExhausted, append(a, KeyRetryReason.String(e.Class.String()))
		},
		record: func(ctx context.Context, i *instruments, _ portico.Event) { i.budget.Add(ctx, 1) },
		fold:   func(c *call, _ portico.Event) { c.budgetOut = true },
	},
	portico.EventFirstChunk: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameLayerFirstChunk, append(a, KeyLayerTTFT.Float64(e.Delay.Seconds()))
		},
	},
	portico.EventFallback: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameFallback, append(a[:0], KeyFallbackSource.String(e.Route), KeyFallbackReason.String(e.Reason),
				KeyErrorType.String(e.Class.String()))
		},
		record: func(ctx context.Context, i *instruments, e portico.Event) {
			i.fallbacks.Add(ctx, 1, metric.WithAttributes(KeyFallbackSource.String(e.Route), KeyFallbackReason.String(e.Reason)))
		},
		fold: func(c *call, e portico.Event) { c.fallbackSource, c.fallbackReason = e.Route, e.Reason },
	},
	portico.EventBreakerState: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameBreakerState, append(a, KeyBreakerState.String(e.Reason))
		},
		record: func(ctx context.Context, i *instruments, e portico.Event) {
			i.breaker.Add(ctx, 1, metric.WithAttributes(KeyRoute.String(e.Route), KeyBreakerState.String(e.Reason)))
		},
		fold: func(c *call, e portico.Event) { c.breakerState = e.Reason },
	},
	portico.EventValidation: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			if !rejected(e) {
				return "", nil
			}
			return EventNameValidationReject, append(a, KeyValidationResult.String("rejected"), KeyErrorType.String(portico.InvalidResponse.String()))
		},
		record: func(ctx context.Context, i *instruments, e portico.Event) {
			if rejected(e) {
				i.validations.Add(ctx, 1)
			}
		},
		fold: func(c *call, e portico.Event) { c.validation = e.Reason },
	},
	portico.EventHedge: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			if e.Reason == "sent" {
				a = append(a, KeyAttemptIndex.Int(e.Attempt), KeyHedgeDelay.Float64(e.Delay.Seconds()))
			}
			return EventNameHedge, append(a, KeyHedgeReason.String(e.Reason))
		},
	},
	portico.EventContinue: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameContinue, append(a, KeyAttemptIndex.Int(e.Attempt), KeyContinueForm.String(e.Reason))
		},
	},
	portico.EventSharedStore: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameSharedStore, append(a, KeySharedStore.String(e.Reason))
		},
		record: func(ctx context.Context, i *instruments, e portico.Event) {
			i.shared.Add(ctx, 1, metric.WithAttributes(KeySharedStore.String(e.Reason)))
		},
	},
	portico.EventCache: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameCache, append(a, KeyCacheResult.String(e.Reason))
		},
		record: func(ctx context.Context, i *instruments, e portico.Event) {
			i.cache.Add(ctx, 1, metric.WithAttributes(KeyCacheResult.String(e.Reason)))
		},
	},
	portico.EventGuard: {
		span: func(e portico.Event, a []attribute.KeyValue) (string, []attribute.KeyValue) {
			return EventNameGuard, append(a[:0], KeyGuardrail.String(e.Route), KeyGuardResult.String(e.Reason))
		},
	},
}
