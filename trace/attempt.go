package trace

import (
	"cmp"
	"context"
	"errors"
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
	if portico.IsNil(next) {
		panic("trace: WrapAttempt of a nil Model")
	}
	if t.inert {
		return next
	}
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return t.attempt(ctx, req, next)
	})
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
	recording := span.IsRecording()
	logging := t.log != nil && t.log.Enabled(ctx, levelOK)
	c := callFrom(ctx)
	if !recording && !logging {
		return t.attemptCounted(ctx, req, next, span, c, model)
	}
	a := &attemptState{span: span, start: startTime(span), attmpt: portico.AttemptFromContext(ctx)}
	if c != nil {
		c.noteAttempt(a.start, t, model)
	}
	ended := false
	defer func() {
		if !ended { // next or a user callback panicked: end the span, then let the panic go on
			span.SetStatus(codes.Error, "panic")
			span.End()
		}
	}()
	r := req
	if recording {
		span.SetAttributes(t.appendAttemptStart(a.attrs[:0], a.attmpt, model, req)...)
		r = a.Watch(req, a)
	}
	resp, err := next.Generate(ctx, r)
	c.noteAnswer(t, model, resp, err)
	var end time.Time
	if logging {
		end = time.Now()
	}
	class := portico.ClassOf(err)
	if recording {
		span.SetAttributes(t.appendAttemptResult(a.attrs[:0], resp, err, class, a.ttft)...)
	}
	endSpan(span, recording, err, class, end)
	ended = true
	if logging {
		t.logAttempt(ctx, req, model, a.attmpt, resp, err, class, end.Sub(a.start))
	}
	return resp, err
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
	if at.Index > 0 {
		buf = append(buf, KeyHTTPResendCount.Int(at.Index))
	}
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
	var usage *portico.Usage
	cost := 0.0
	if class != portico.OK {
		a = append(a, KeyErrorType.String(class.String()))
		var pe *portico.Error
		if errors.As(err, &pe) {
			if pe.Status != 0 {
				a = append(a, KeyHTTPStatusCode.Int(pe.Status))
			}
			if pe.Usage != nil {
				usage = pe.Usage
				if t.cfg.Pricing != nil {
					cost = t.cfg.Pricing.Cost(*pe.Usage)
				}
			}
		}
	}
	if resp != nil && usage == nil {
		usage = &resp.Usage
		cost = t.cost(resp)
	}
	if usage != nil {
		a = append(a, KeyAttemptInputTokens.Int(usage.InputTokens), KeyAttemptOutputTokens.Int(usage.OutputTokens))
		if usage.CachedInputTokens > 0 {
			a = append(a, KeyAttemptCacheReadTokens.Int(usage.CachedInputTokens))
		}
		if usage.ReasoningTokens > 0 {
			a = append(a, KeyAttemptReasoningTokens.Int(usage.ReasoningTokens))
		}
	}
	if cost > 0 {
		a = append(a, KeyAttemptCost.Float64(cost))
	}
	if ttft > 0 {
		a = append(a, KeyTTFTProvider.Float64(ttft.Seconds()))
	}
	return a
}
