package trace

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Wrap is the request layer, a [portico.Middleware]: put it outermost so that
// every other layer's time falls inside its span.
//
// Per request it starts one client span named "{operation} {model}" ("chat
// gpt-4o") with the GenAI attributes, installs a [portico.Observer] in the
// context that turns inner layers' events into span events, portico.*
// attributes and metrics, notes the first chunk of a stream (the caller's
// request is never modified), and at the end records the answer's
// attributes (the answering route's provider, server and model, see
// [Tracer.ForRoute]), the metrics and one log record. With nothing to
// record (a span that does not record, no instrument enabled, no logger) it
// allocates nothing. It returns next's response and error unchanged and
// panics if next is nil; a nil request goes to next untraced; a panic below,
// or in Config.CaptureContent, ends the span as an error before it goes on.
// A Tracer over no-op trace and meter providers and no logger records
// nothing: it returns next itself, as if there were no Tracer.
func (t *Tracer) Wrap(next portico.Model) portico.Model { return t.wrap("Wrap", next, t.generate) }

// wrap returns next run through the layer, or next itself when t records
// nothing; method, the wrapping method's name, names a nil next's panic.
func (t *Tracer) wrap(method string, next portico.Model, layer func(context.Context, *portico.Request, portico.Model) (*portico.Response, error)) portico.Model {
	portico.PanicIfNil(next, "trace: "+method+" of a nil Model")
	if t.inert {
		return next
	}
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return layer(ctx, req, next)
	})
}

type callKey struct{}

// call is the state of one request: the request span, the figures inner
// layers reported, and the context handed down (the call itself, so that the
// attempt layer finds it without another allocation).
type call struct {
	context.Context // the parent context plus the Observer (this call)

	t         *Tracer
	parent    context.Context // before the Observer: events are forwarded there
	span      trace.Span
	req       *portico.Request
	start     time.Time
	recording bool
	metrics   bool
	logging   bool
	finished  bool // finish ended the span

	portico.StreamWatch // notes the first chunk; the call is its gate
	attemptCount        atomic.Int32

	mu            sync.Mutex
	figures                 // what the layers reported
	attemptStart  time.Time // start of the latest attempt
	attemptTracer *Tracer   // the latest attempt's layer: the answering route's, when one answers
	attemptModel  string    // the latest attempt's model
	answerTracer  *Tracer   // the layer of the latest attempt that answered (nil if none did)
	answerModel   string    // that attempt's model

	attrs [12]attribute.KeyValue
}

// Value answers the call itself for callKey and defers to the parent chain
// otherwise.
func (c *call) Value(key any) any {
	if key == (callKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

func (t *Tracer) generate(ctx context.Context, req *portico.Request, next portico.Model) (*portico.Response, error) {
	if req == nil { // a caller's bug: let the inner layers classify it, untraced
		return next.Generate(ctx, req)
	}
	ctx, span := t.start(ctx, req.Model, false)
	recording := span.IsRecording()
	metrics := t.inst.enabled(ctx)
	logging := t.logs(ctx)
	if !recording && !metrics && !logging {
		resp, err := next.Generate(ctx, req)
		span.End()
		return resp, err
	}
	c := &call{t: t, parent: ctx, span: span, req: req, start: startTime(span),
		recording: recording, metrics: metrics, logging: logging}
	c.Context = portico.ContextWithObserver(ctx, c)
	defer func() {
		if !c.finished { // next or a user callback panicked: end the span, then let the panic go on
			c.finish(nil, errPanic)
		}
	}()
	if recording {
		t.startAttrs(span, c.attrs[:0], req, true)
	}
	resp, err := next.Generate(c, c.Watch(req, c))
	c.finish(resp, err)
	return resp, err
}

// errPanic is what the layers record for a call that panicked.
var errPanic error = &portico.Error{Class: portico.Permanent, Reason: "panic"}

// startTime returns the span's own start time when it has one (an SDK span),
// saving a clock read, and the time now otherwise.
func startTime(span trace.Span) time.Time {
	if ro, ok := span.(interface{ StartTime() time.Time }); ok {
		if t := ro.StartTime(); !t.IsZero() {
			return t
		}
	}
	return time.Now()
}

// startAttrs sets the attributes known before the call on span, building them
// in buf (a call's or attempt's own array, so nothing more is allocated);
// content adds the opted-in input messages.
func (t *Tracer) startAttrs(span trace.Span, buf []attribute.KeyValue, req *portico.Request, content bool) []attribute.KeyValue {
	buf = t.labels(req).append(append(buf, KeyOperationName.String(t.op)), true)
	buf = appendInt(buf, KeyRequestMaxTokens, req.MaxOutputTokens)
	buf = append(buf, KeyRequestStream.Bool(req.OnChunk != nil))
	if len(req.Extra) > 0 {
		buf = appendSampling(buf, req.Extra)
	}
	buf = appendString(buf, KeyOperationID, req.Identity.OperationID)
	if content && t.cfg.CaptureContent != nil {
		buf = append(buf, KeyInputMessages.String(inputMessages(req, t.cfg.CaptureContent)))
	}
	span.SetAttributes(buf...)
	return buf
}

// GateChunk passes every chunk on, noting when the first one passes; then
// it ungates the watch.
func (c *call) GateChunk(_ portico.Chunk, delivered bool) (bool, error) {
	if !delivered {
		c.onFirstChunk(time.Now())
		c.Ungate()
	}
	return true, nil
}

func (c *call) onFirstChunk(now time.Time) {
	ttft := now.Sub(c.start)
	c.mu.Lock()
	c.ttft = ttft
	wait, astart := c.rlWait, c.attemptStart
	c.mu.Unlock()
	if !c.recording {
		return
	}
	// TTFT = rate-limit wait + routing and queueing before the answering
	// attempt (including failed attempts) + the provider's time to first chunk.
	attrs := []attribute.KeyValue{KeyTimeToFirstChunk.Float64(ttft.Seconds()), KeyTTFTRateLimitWait.Float64(wait.Seconds())}
	if !astart.IsZero() {
		attrs = append(attrs,
			KeyTTFTRouting.Float64(max(astart.Sub(c.start)-wait, 0).Seconds()),
			KeyTTFTProvider.Float64(now.Sub(astart).Seconds()))
	}
	c.span.AddEvent(EventNameFirstChunk, trace.WithTimestamp(now), trace.WithAttributes(attrs...))
}

// labels returns the request layer's own names for req.
func (t *Tracer) labels(req *portico.Request) labels {
	return labels{provider: t.cfg.Provider, server: t.cfg.ServerAddress, port: t.cfg.ServerPort, model: req.Model}
}

// append appends the names as span attributes (those startAttrs set, which
// they replace), the model only when withModel.
func (l labels) append(a []attribute.KeyValue, withModel bool) []attribute.KeyValue {
	a = appendString(a, KeyProviderName, l.provider)
	if withModel {
		a = appendString(a, KeyRequestModel, l.model)
	}
	return appendServer(a, l.server, l.port)
}

// appendServer appends server.address, and server.port with it when known.
func appendServer(a []attribute.KeyValue, addr string, port int) []attribute.KeyValue {
	if addr == "" {
		return a
	}
	return appendInt(append(a, KeyServerAddress.String(addr)), KeyServerPort, port)
}

// noteAttempt is called by the attempt layer t when an attempt of model
// starts.
func (c *call) noteAttempt(start time.Time, t *Tracer, model string) {
	c.attemptCount.Add(1)
	c.mu.Lock()
	c.attemptStart = start
	c.attemptTracer, c.attemptModel = t, model
	c.mu.Unlock()
}

// noteAnswer is called by the attempt layer t when an attempt of model
// returned resp and err: an answer (resp, no error) of that attempt, not the
// latest one started (a hedge that lost, a cascade's later step that
// failed), names the request's answer. A nil c (no request layer) or no
// answer notes nothing.
func (c *call) noteAnswer(t *Tracer, model string, resp *portico.Response, err error) {
	if c == nil || err != nil || resp == nil {
		return
	}
	c.mu.Lock()
	c.answerTracer, c.answerModel = t, model
	c.mu.Unlock()
}

// figures are what the layers reported of a call (folded from its events,
// see eventRules) and its first chunk.
type figures struct {
	ttft                           time.Duration
	rlWait, retryDelay             time.Duration
	retries                        int
	retryReason                    portico.Class
	budgetOut                      bool
	breakerState, validation       string
	fallbackSource, fallbackReason string
}

// summary is what finish reads from a call under its lock.
type summary struct {
	figures
	attempts int
	labels   labels
	relabel  bool // labels differ from those the span started with
}

func (c *call) summary(resp *portico.Response, err error) summary {
	c.mu.Lock()
	s := summary{figures: c.figures}
	at, model := c.attemptTracer, c.attemptModel
	if c.answerTracer != nil {
		at, model = c.answerTracer, c.answerModel
	}
	c.mu.Unlock()
	s.labels = c.t.labels(c.req)
	if resp != nil && at != nil {
		l := s.labels.answeredBy(at, model)
		s.relabel, s.labels = l != s.labels, l
	}
	s.attempts = c.attempts(s.retries, err)
	if resp != nil && len(resp.Hops) > 0 {
		h := resp.Hops[len(resp.Hops)-1]
		s.fallbackSource, s.fallbackReason = h.Route, h.Reason
	}
	return s
}

// attempts returns how many attempts the call made, ending with err after
// retries retries: those the attempt layers counted, or when none did
// (none below, or its Tracer records nothing) the first attempt and one per
// retry, unless err says that no request left the process.
func (c *call) attempts(retries int, err error) int {
	if n := int(c.attemptCount.Load()); n > 0 || portico.NothingSent(err) {
		return n
	}
	return 1 + retries
}

// answeredBy returns l with the names of at, the attempt layer whose attempt
// of model answered, in place of the request layer's.
func (l labels) answeredBy(at *Tracer, model string) labels {
	l.provider = cmp.Or(at.cfg.Provider, l.provider)
	if at.cfg.ServerAddress != "" {
		l.server, l.port = at.cfg.ServerAddress, at.cfg.ServerPort
	}
	l.model = cmp.Or(l.model, model)
	return l
}

func (c *call) finish(resp *portico.Response, err error) {
	end := clockIf(c.metrics || c.logging)
	s := c.summary(resp, err)
	class := portico.ClassOf(err)
	if c.recording {
		c.span.SetAttributes(s.append(c.resultAttrs(resp, err, class, &s))...)
		if resp != nil && c.t.cfg.CaptureContent != nil {
			c.span.SetAttributes(KeyOutputMessages.String(outputMessages(resp, c.t.cfg.CaptureContent)))
		}
	}
	endSpan(c.span, c.recording, err, class, end)
	c.finished = true // the span ended: a panic in a metric reader or log handler is not recorded twice
	if c.metrics {
		c.t.inst.recordRequest(c.parent, c.t, c.req, resp, class, end.Sub(c.start), s)
	}
	if c.logging {
		c.t.logRequest(c.parent, c.req, resp, err, class, end.Sub(c.start), s)
	}
}

// resultAttrs returns, in c.attrs, what the request ended with: its labels
// when a layer below changed them (renaming the span), the answer or error,
// who refused it, its time to first chunk, route and cost.
func (c *call) resultAttrs(resp *portico.Response, err error, class portico.Class, s *summary) []attribute.KeyValue {
	a := c.attrs[:0]
	if s.relabel {
		a = s.labels.append(a, c.req.Model == "")
		if c.req.Model == "" && s.labels.model != "" {
			c.span.SetName(c.t.spanName(s.labels.model).name)
		}
	}
	a = appendResult(a, resp, class)
	if by := portico.RefuserOf(err); by != portico.NotRefused {
		a = append(a, KeyRefusedBy.String(by.String()))
	}
	a = appendFloat(a, KeyTimeToFirstChunk, s.ttft.Seconds())
	a = appendString(a, KeyRoute, routeOf(resp))
	return appendFloat(a, KeyCost, c.t.cost(resp))
}

// append appends what the layers noted on the request: its attempts and
// retries, budget, rate-limit wait, breaker state, validation and fallback.
func (s *summary) append(a []attribute.KeyValue) []attribute.KeyValue {
	a = append(a, KeyAttempts.Int(s.attempts))
	if s.retries > 0 {
		a = append(a, KeyRetryCount.Int(s.retries), KeyRetryReason.String(s.retryReason.String()),
			KeyRetryDelay.Float64(s.retryDelay.Seconds()))
	}
	if s.budgetOut {
		a = append(a, KeyBudgetExhausted.Bool(true))
	}
	a = appendFloat(a, KeyRateLimitWait, s.rlWait.Seconds())
	a = appendString(appendString(a, KeyBreakerState, s.breakerState), KeyValidationResult, s.validation)
	if s.fallbackSource != "" || s.fallbackReason != "" {
		a = append(a, KeyFallbackSource.String(s.fallbackSource), KeyFallbackReason.String(s.fallbackReason))
	}
	return a
}

// endSpan ends span at end (now when zero), with an error status when err
// is not nil; a span that records nothing just ends.
func endSpan(span trace.Span, recording bool, err error, class portico.Class, end time.Time) {
	switch {
	case !recording:
		span.End()
		return
	case err != nil:
		span.SetStatus(codes.Error, errorDescription(err, class))
	}
	if end.IsZero() {
		span.End()
	} else {
		span.End(trace.WithTimestamp(end))
	}
}

// appendResult appends the answer's GenAI attributes, or error.type on failure.
func appendResult(a []attribute.KeyValue, resp *portico.Response, class portico.Class) []attribute.KeyValue {
	if class != portico.OK {
		a = append(a, KeyErrorType.String(class.String()))
	}
	if resp == nil {
		return a
	}
	a = appendString(appendString(a, KeyResponseModel, resp.Model), KeyResponseID, resp.ID)
	a = appendUsage(a, &resp.Usage, requestUsageKeys)
	if resp.FinishReason != "" {
		a = append(a, KeyFinishReasons.StringSlice([]string{string(resp.FinishReason)}))
	}
	return a
}

// errorDescription is the span status description: the class and the
// content-free reason and code of the first *portico.Error, never the message
// of an arbitrary error (which might quote provider text).
func errorDescription(err error, class portico.Class) string {
	var pe *portico.Error
	if errors.As(err, &pe) {
		d := class.String()
		if pe.Code != "" {
			d += " " + pe.Code
		}
		if pe.Reason != "" {
			d += ": " + pe.Reason
		}
		return d
	}
	return class.String()
}

// appendSampling appends gen_ai.request.temperature, top_p and seed from the
// provider options in Request.Extra, when present with a numeric value.
func appendSampling(buf []attribute.KeyValue, extra map[string]any) []attribute.KeyValue {
	if v, ok := number(extra["temperature"]); ok {
		buf = append(buf, KeyRequestTemperature.Float64(v))
	}
	if v, ok := number(extra["top_p"]); ok {
		buf = append(buf, KeyRequestTopP.Float64(v))
	}
	if v, ok := number(extra["seed"]); ok {
		buf = append(buf, KeyRequestSeed.Int64(int64(v)))
	}
	return buf
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}
