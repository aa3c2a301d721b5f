package trace

import (
	"cmp"
	"context"
	"time"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// WrapAttempt is the attempt layer, a [portico.Middleware]: put it inside the
// retry layer (and inside the fallback's per-route stack), just outside the
// provider adapter, so that it runs once per attempt.
//
// Per attempt it starts a client span, a child of the request span, named
// "attempt {model}" (the attempt's Request.Model, else the route's, see
// [Tracer.ForRoute]), with the portico.attempt.* attributes, portico.route,
// http.request.resend_count on retries, server.address and server.port, and
// at the end error.type, http.response.status_code and the attempt's own
// usage and cost; no gen_ai.* attribute (the package documentation says
// which, and why: "Counted once"). Its context carries the span, so
// [Tracer.Transport]'s traceparent names the attempt. It notes the attempt
// with the request layer and writes one log record per attempt. It returns
// next's response and error unchanged and panics if next is nil; a nil
// request goes to next untraced; a panic below ends the span as an error
// before it goes on. A Tracer that records nothing returns next itself, as
// [Tracer.Wrap] does: its attempts are then noted with no request layer.
func (t *Tracer) WrapAttempt(next portico.Model) portico.Model {
	return t.wrap("WrapAttempt", next, t.attempt)
}

// attemptState is one attempt's recording state; when the attempt streams,
// its watch's gate notes the first chunk.
type attemptState struct {
	portico.StreamWatch
	span   trace.Span
	start  time.Time
	ttft   time.Duration
	attrs  [12]attribute.KeyValue
	attmpt portico.Attempt
	ended  bool // the span ended
}

// GateChunk passes every chunk on, and adds the first-chunk event to the
// attempt's span when the first one passes; then it ungates the watch.
func (a *attemptState) GateChunk(_ portico.Chunk, delivered bool) (bool, error) {
	if !delivered {
		now := time.Now()
		a.ttft = now.Sub(a.start)
		a.span.AddEvent(EventNameFirstChunk, trace.WithTimestamp(now),
			trace.WithAttributes(KeyTTFTProvider.Float64(a.ttft.Seconds())))
		a.Ungate()
	}
	return true, nil
}

func (t *Tracer) attempt(ctx context.Context, req *portico.Request, next portico.Model) (*portico.Response, error) {
	if req == nil { // a caller's bug: let the inner layers classify it, untraced
		return next.Generate(ctx, req)
	}
	model := cmp.Or(req.Model, t.model) // else the route's, from ForRoute
	ctx, span := t.start(ctx, model, true)
	recording, logging := span.IsRecording(), t.logs(ctx)
	if !recording && !logging {
		return t.attemptCounted(ctx, req, next, span, callFrom(ctx), model)
	}
	a := &attemptState{span: span, start: startTime(span), attmpt: portico.AttemptFromContext(ctx)}
	c := callFrom(ctx)
	if c != nil {
		c.noteAttempt(a.start, t, model)
	}
	defer endPanicked(span, &a.ended)
	r := req
	if recording {
		span.SetAttributes(t.appendAttemptStart(a.attrs[:0], a.attmpt, model, req)...)
		r = a.Watch(req, a)
	}
	resp, err := next.Generate(ctx, r)
	c.noteAnswer(t, model, resp, err)
	end := clockIf(logging)
	class := portico.ClassOf(err)
	if recording {
		span.SetAttributes(t.appendAttemptResult(a.attrs[:0], resp, err, class, a.ttft)...)
	}
	endSpan(span, recording, err, class, end)
	a.ended = true
	if logging {
		t.logAttempt(ctx, req, model, a.attmpt, resp, err, class, end.Sub(a.start))
	}
	return resp, err
}

// endPanicked ends span as an error unless ended: deferred by a layer, it
// ends the span of a call that panicked (next or a user callback) before
// the panic goes on.
func endPanicked(span trace.Span, ended *bool) {
	if !*ended {
		span.SetStatus(codes.Error, "panic")
		span.End()
	}
}

// clockIf returns the time now when needed, else the zero Time: time.Now
// is not free on every VM.
func clockIf(needed bool) time.Time {
	if needed {
		return time.Now()
	}
	return time.Time{}
}

// attemptCounted runs an attempt that is neither recorded nor logged: the
// request layer still counts it, and its answer, for its metrics.
func (t *Tracer) attemptCounted(ctx context.Context, req *portico.Request, next portico.Model, span trace.Span, c *call, model string) (*portico.Response, error) {
	if c != nil {
		c.noteAttempt(time.Now(), t, model)
	}
	resp, err := next.Generate(ctx, req)
	span.End()
	c.noteAnswer(t, model, resp, err)
	return resp, err
}

// appendAttemptStart appends what an attempt starts with: its index, ID,
// resend count, model, route, provider, server and operation.
func (t *Tracer) appendAttemptStart(buf []attribute.KeyValue, at portico.Attempt, model string, req *portico.Request) []attribute.KeyValue {
	buf = appendString(append(buf, KeyAttemptIndex.Int(at.Index)), KeyAttemptID, at.ID)
	buf = appendInt(buf, KeyHTTPResendCount, at.Index)
	buf = appendString(buf, KeyAttemptModel, model)
	buf = appendString(buf, KeyRoute, t.route)
	buf = appendString(buf, KeyAttemptProvider, t.cfg.Provider)
	buf = appendServer(buf, t.cfg.ServerAddress, t.cfg.ServerPort)
	return appendString(buf, KeyOperationID, req.Identity.OperationID)
}

// appendString appends key with the value v, unless v is empty.
func appendString(a []attribute.KeyValue, key attribute.Key, v string) []attribute.KeyValue {
	if v != "" {
		a = append(a, key.String(v))
	}
	return a
}

// appendAttemptResult appends what an attempt ended with: error.type and
// http.response.status_code on failure, the attempt's own usage and cost
// under portico.attempt.* (the answer's, or the billed Usage a failure
// carries), never under gen_ai.usage.*, which the request span alone carries,
// and its time to first chunk.
func (t *Tracer) appendAttemptResult(a []attribute.KeyValue, resp *portico.Response, err error, class portico.Class, ttft time.Duration) []attribute.KeyValue {
	if class != portico.OK {
		a = append(a, KeyErrorType.String(class.String()))
		a = appendInt(a, KeyHTTPStatusCode, status(err))
	}
	usage, cost := t.attemptUsage(resp, err)
	if usage != nil {
		a = appendUsage(a, usage, attemptUsageKeys)
	}
	return appendFloat(appendFloat(a, KeyAttemptCost, cost), KeyTTFTProvider, ttft.Seconds())
}

// attemptUsage returns what an attempt used and its cost: the billed Usage
// its error carries ([portico.UsageOf]), priced by Config.Pricing, else its
// answer's; nil and 0 with neither.
func (t *Tracer) attemptUsage(resp *portico.Response, err error) (*portico.Usage, float64) {
	switch u := portico.UsageOf(err); {
	case u != nil && t.cfg.Pricing != nil:
		return u, t.cfg.Pricing.Cost(*u)
	case u != nil:
		return u, 0
	case resp != nil:
		return &resp.Usage, t.cost(resp)
	}
	return nil, 0
}

// appendInt appends key with the value n, unless n is not positive.
func appendInt(a []attribute.KeyValue, key attribute.Key, n int) []attribute.KeyValue {
	if n > 0 {
		a = append(a, key.Int(n))
	}
	return a
}

// appendFloat appends key with the value f, unless f is not positive.
func appendFloat(a []attribute.KeyValue, key attribute.Key, f float64) []attribute.KeyValue {
	if f > 0 {
		a = append(a, key.Float64(f))
	}
	return a
}

// usageKeys are the attribute keys of a Usage's input, output, cache-read
// and reasoning tokens.
type usageKeys struct{ in, out, cached, reasoning attribute.Key }

var (
	requestUsageKeys = usageKeys{KeyInputTokens, KeyOutputTokens, KeyCacheReadTokens, KeyReasoningTokens}
	attemptUsageKeys = usageKeys{KeyAttemptInputTokens, KeyAttemptOutputTokens, KeyAttemptCacheReadTokens, KeyAttemptReasoningTokens}
)

// appendUsage appends u's input and output tokens, and its cache-read and
// reasoning tokens when there are any, under k's keys.
func appendUsage(a []attribute.KeyValue, u *portico.Usage, k usageKeys) []attribute.KeyValue {
	a = append(a, k.in.Int(u.InputTokens), k.out.Int(u.OutputTokens))
	return appendInt(appendInt(a, k.cached, u.CachedInputTokens), k.reasoning, u.ReasoningTokens)
}
