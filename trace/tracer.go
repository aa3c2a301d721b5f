package trace

import (
	"cmp"
	"context"

	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/portico-llm/portico"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope under which a [Tracer] obtains its
// OpenTelemetry tracer and meter: the package's import path.
const ScopeName = "github.com/portico-llm/portico/trace"

// Config configures a [Tracer]. The zero Config is ready to use: global
// OpenTelemetry providers, operation "chat", no logs, no content captured.
type Config struct {
	// TracerProvider creates the spans. Nil means otel.GetTracerProvider(), read
	// once in New. Before any otel.SetTracerProvider that is otel's delegating
	// placeholder: the layers then skip Start (no span, no allocation) until a
	// provider is set, which they notice on the next call.
	TracerProvider trace.TracerProvider
	// MeterProvider creates the instruments listed in the package documentation.
	// Nil means otel.GetMeterProvider(), read once in New.
	MeterProvider metric.MeterProvider
	// Propagator injects the trace context into outgoing HTTP requests through
	// [Tracer.Transport]. Nil means W3C Trace Context (propagation.TraceContext,
	// the traceparent and tracestate headers) whatever the global propagator is.
	Propagator propagation.TextMapPropagator
	// Logger receives one record per request and one per attempt (see the
	// package documentation for their fields). Nil discards them.
	Logger *slog.Logger
	// Provider is the gen_ai.provider.name of the calls ("openai",
	// "azure.ai.openai", "anthropic", ...). Empty omits the attribute, which
	// the GenAI conventions make required on spans and metrics: set it. It
	// goes on request spans and metrics (attempt spans carry no gen_ai.*
	// attribute) and in the "provider" field of both kinds of log record: give
	// each route's attempt layer its own [Tracer.ForRoute] when routes use
	// different providers.
	Provider string
	// ServerAddress is the server.address of the calls ("api.openai.com").
	// Empty omits the attribute.
	ServerAddress string
	// ServerPort is the server.port of the calls (443), which the conventions
	// require beside server.address. Zero, or no ServerAddress, omits it;
	// outside [0, 65535] is an error.
	ServerPort int
	// Operation is the gen_ai.operation.name and the first word of request
	// span names (attempt spans are named "attempt {model}"). Empty means
	// "chat".
	Operation string
	// Pricing, when non-nil, prices answers whose Response.Cost is 0 (no
	// routing layer priced them) with Pricing.Cost(resp.Usage), for the
	// portico.cost span attribute, the cost metric and the "cost" log field;
	// on attempt spans it also prices the attempt's own usage, a failed
	// attempt's billed portico.Error.Usage included, for portico.attempt.cost.
	// Give each route's attempt layer the route's own Capabilities. Nil leaves
	// unpriced answers at cost 0.
	Pricing *portico.Capabilities
	// CaptureContent, when non-nil, opts in to recording message content on
	// request spans: every text, image URL and tool-call argument of the request and of
	// the answer passes through CaptureContent (a redaction or hashing function)
	// and the results go into the gen_ai.input.messages and
	// gen_ai.output.messages attributes as JSON. Nil, the default, records no
	// content anywhere: not in spans, span events, metrics or logs. Logs never
	// carry content, even when CaptureContent is set. It is called synchronously,
	// must be safe for concurrent use, and runs only for recording spans.
	CaptureContent func(string) string
}

// Tracer produces OpenTelemetry spans, metrics and slog records for Portico
// calls. Its [Tracer.Wrap] method is the request-layer [portico.Middleware]
// (outermost) and [Tracer.WrapAttempt] the attempt-layer one (inside the retry
// layer). A Tracer is safe for concurrent use; one Tracer may serve both layers
// and any number of stacks.
type Tracer struct {
	cfg       Config
	op        string
	tracer    trace.Tracer
	inst      *instruments
	log       *slog.Logger
	prop      propagation.TextMapPropagator
	startOpts []trace.SpanStartOption
	noop      bool // the provider is noop.TracerProvider: skip Start altogether
	inert     bool // noop, a no-op meter provider and no logger: Wrap adds no layer

	// route and model, set by ForRoute: the route's name and its model when
	// the request names none.
	route, model string

	// global is the provider when it is otel's global placeholder (the
	// delegating provider otel.GetTracerProvider returns before any
	// otel.SetTracerProvider), else nil. globalIdle records that a Start
	// through it, made while it was still the global provider, created no span;
	// it holds only while otel.GetTracerProvider() still returns global.
	global     trace.TracerProvider
	globalIdle atomic.Bool

	lastName atomic.Pointer[spanName]
	names    sync.Map // model string -> *spanName
	nNames   atomic.Int32
}

// maxCachedNames bounds the span-name cache (one entry per distinct model),
// and maxCachedModelLen the length in bytes of the model names it keeps, so
// that the cache holds at most about 100 KB whatever model names callers send.
const (
	maxCachedNames    = 256
	maxCachedModelLen = 256
)

// spanName holds the two span names of a model: the request span's
// "{operation} {model}" and the attempt span's "attempt {model}".
type spanName struct{ model, name, attempt string }

// New returns a Tracer configured by cfg. It fails, with an error starting
// "trace:", when Config.ServerPort is outside [0, 65535], or when the meter
// provider refuses to create an instrument (the error wraps the provider's).
func New(cfg Config) (*Tracer, error) {
	if cfg.ServerPort < 0 || cfg.ServerPort > 65535 {
		return nil, fmt.Errorf("trace: Config.ServerPort %d is outside [0, 65535]", cfg.ServerPort)
	}
	tp, mp := cmp.Or(cfg.TracerProvider, otel.GetTracerProvider()), cmp.Or(cfg.MeterProvider, otel.GetMeterProvider())
	t := &Tracer{
		cfg:       cfg,
		op:        cmp.Or(cfg.Operation, "chat"),
		tracer:    tp.Tracer(ScopeName),
		log:       cfg.Logger,
		prop:      cmp.Or(cfg.Propagator, propagation.TextMapPropagator(propagation.TraceContext{})),
		startOpts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
	}
	_, t.noop = tp.(noop.TracerProvider)
	_, noopMeter := mp.(metricnoop.MeterProvider)
	t.inert = t.noop && noopMeter && cfg.Logger == nil
	if isGlobalPlaceholder(tp) {
		t.global = tp
	}
	inst, err := newInstruments(mp.Meter(ScopeName))
	if err != nil {
		return nil, errors.Join(errors.New("trace: creating instruments"), err)
	}
	t.inst = inst
	return t, nil
}

// spanName returns the span names for model (see spanName), from a cache so
// that the hot path does not allocate.
func (t *Tracer) spanName(model string) *spanName {
	if p := t.lastName.Load(); p != nil && p.model == model {
		return p
	}
	if v, ok := t.names.Load(model); ok {
		return v.(*spanName)
	}
	n := &spanName{model: model, name: t.op, attempt: "attempt"}
	if model != "" {
		n.name = t.op + " " + model
		n.attempt = "attempt " + model
	}
	t.cacheName(n)
	t.lastName.Store(n)
	return n
}

// cacheName keeps n in the cache of span names, unless the cache is full
// or n's model name too long to keep.
func (t *Tracer) cacheName(n *spanName) {
	// Load first, so that the count stops at the bound instead of wrapping
	// around after 2^31 uncached calls and letting the map grow again.
	if len(n.model) <= maxCachedModelLen && t.nNames.Load() < maxCachedNames && t.nNames.Add(1) <= maxCachedNames {
		t.names.Store(n.model, n)
	}
}

// noopSpan is the span the layers use when the provider is a no-op one.
var noopSpan trace.Span = noop.Span{}

// globalPkg is the package of otel's global delegating providers.
const globalPkg = "go.opentelemetry.io/otel/internal/global"

// isGlobalPlaceholder reports whether tp is otel's global delegating
// provider (what otel.GetTracerProvider returns until a provider is set).
func isGlobalPlaceholder(tp trace.TracerProvider) bool {
	rt := reflect.TypeOf(tp)
	return rt != nil && rt.Kind() == reflect.Pointer && rt.Elem().PkgPath() == globalPkg
}

// start starts a client span named after model: the request span's name, or
// the attempt span's when attempt is true. With a no-op provider it
// returns ctx unchanged and a no-op span, saving the context allocation and
// the call that a no-op Start would cost.
//
// With otel's global placeholder (the zero Config, no SDK installed) it does
// the same once a Start through the placeholder has been seen to create no
// span (not recording, and the parent's span context handed back): the
// placeholder then only wraps the parent's span context in a non-recording
// span, which ctx already carries, at three allocations. The decision is
// checked against otel.GetTracerProvider() on every call, so an
// otel.SetTracerProvider made later takes effect at once; should the
// placeholder ever be made the global provider again, Start is probed anew.
func (t *Tracer) start(ctx context.Context, model string, attempt bool) (context.Context, trace.Span) {
	switch {
	case t.noop:
		return ctx, noopSpan
	case t.global == nil:
	case otel.GetTracerProvider() == t.global:
		return t.startGlobal(ctx, model, attempt)
	case t.globalIdle.Load():
		t.globalIdle.Store(false) // the placeholder is no longer the global provider
	}
	return t.tracer.Start(ctx, t.name(model, attempt), t.startOpts...)
}

// startGlobal is start through otel's global placeholder while it is the
// global provider: no span once a Start has been seen to create none.
func (t *Tracer) startGlobal(ctx context.Context, model string, attempt bool) (context.Context, trace.Span) {
	if t.globalIdle.Load() {
		return ctx, noopSpan
	}
	sctx, span := t.tracer.Start(ctx, t.name(model, attempt), t.startOpts...)
	if !span.IsRecording() && span.SpanContext().Equal(trace.SpanContextFromContext(ctx)) {
		t.globalIdle.Store(true)
	}
	return sctx, span
}

func (t *Tracer) name(model string, attempt bool) string {
	n := t.spanName(model)
	if attempt {
		return n.attempt
	}
	return n.name
}

// cost returns resp's cost: Response.Cost when a layer priced it, else the
// estimate from Config.Pricing, else 0.
func (t *Tracer) cost(resp *portico.Response) float64 {
	if resp == nil {
		return 0
	}
	if resp.Cost > 0 || t.cfg.Pricing == nil {
		return resp.Cost
	}
	return t.cfg.Pricing.Cost(resp.Usage)
}
