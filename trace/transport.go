package trace

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Transport returns an [http.RoundTripper] that injects the trace context of
// each request's context (the attempt span, under [Tracer.WrapAttempt]) into
// the outgoing headers with the Tracer's propagator (W3C traceparent and
// tracestate by default), so that the provider's server-side trace joins the
// client's. Give it to the provider adapter's HTTP client. base nil means
// [http.DefaultTransport]. Requests whose context carries no valid span pass
// through untouched; others are cloned before the headers are set, as the
// RoundTripper contract requires. Safe for concurrent use.
func (t *Tracer) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base, prop: t.prop}
}

type transport struct {
	base http.RoundTripper
	prop propagation.TextMapPropagator
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return t.base.RoundTrip(r)
	}
	r2 := r.Clone(ctx)
	t.prop.Inject(ctx, propagation.HeaderCarrier(r2.Header))
	return t.base.RoundTrip(r2)
}
