package trace

import (
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
// Per attempt it starts a client span, a child of the request span, named like
// the request span from the attempt's own model, with the GenAI request and
// response attributes, portico.attempt.index and portico.attempt.id from
// [portico.AttemptFromContext], and http.request.resend_count on retries
// (index > 0). The context it hands down carries this span, so the traceparent
// that [Tracer.Transport] injects into the provider's HTTP request names the
// attempt's own span id. It also notes the attempt with the enclosing request
// layer (attempt counts and the TTFT decomposition) and writes one log record
// per attempt. It returns next's response and error unchanged and panics if
// next is nil. A nil request is passed to next untraced; a panic below, or in
// Config.CaptureContent, ends the span as an error before it goes on.
func (t *Tracer) WrapAttempt(next portico.Model) portico.Model {
	if next == nil {
		panic("trace: WrapAttempt of a nil Model")
	}
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return t.attempt(ctx, req, next)
	})
}

// attemptState is one attempt's recording state.
type attemptState struct {
	start  time.Time
	ttft   time.Duration
	first  bool
	attrs  [12]attribute.KeyValue
	attmpt portico.Attempt
}

func (t *Tracer) attempt(ctx context.Context, req *portico.Request, next portico.Model) (*portico.Response, error) {
	if req == nil { // a caller's bug: let the inner layers classify it, untraced
		return next.Generate(ctx, req)
	}
	ctx, span := t.start(ctx, req.Model)
	recording := span.IsRecording()
	logging := t.log != nil && t.log.Enabled(ctx, levelOK)
	c := callFrom(ctx)
	if !recording && !logging {
		if c != nil { // the request layer counts attempts for its metrics
			c.noteAttempt(time.Now())
		}
		resp, err := next.Generate(ctx, req)
		span.End()
		return resp, err
	}
	a := &attemptState{start: startTime(span), attmpt: portico.AttemptFromContext(ctx)}
	if c != nil {
		c.noteAttempt(a.start)
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
		buf := t.startAttrs(span, a.attrs[:0], req, false)
		buf = append(buf[:0], KeyAttemptIndex.Int(a.attmpt.Index))
		if a.attmpt.ID != "" {
			buf = append(buf, KeyAttemptID.String(a.attmpt.ID))
		}
		if a.attmpt.Index > 0 {
			buf = append(buf, KeyHTTPResendCount.Int(a.attmpt.Index))
		}
		span.SetAttributes(buf...)
		if req.OnChunk != nil {
			r = req.Clone()
			user := req.OnChunk
			r.OnChunk = func(ch portico.Chunk) error {
				if !a.first {
					a.first = true
					now := time.Now()
					a.ttft = now.Sub(a.start)
					span.AddEvent(EventNameFirstChunk, trace.WithTimestamp(now),
						trace.WithAttributes(KeyTimeToFirstChunk.Float64(a.ttft.Seconds())))
				}
				return user(ch)
			}
		}
	}
	resp, err := next.Generate(ctx, r)
	var end time.Time
	if logging {
		end = time.Now()
	}
	class := portico.ClassOf(err)
	if recording {
		buf := appendResult(a.attrs[:0], resp, class)
		if a.ttft > 0 {
			buf = append(buf, KeyTimeToFirstChunk.Float64(a.ttft.Seconds()))
		}
		if cost := t.cost(resp); cost > 0 {
			buf = append(buf, KeyCost.Float64(cost))
		}
		span.SetAttributes(buf...)
		if resp != nil && t.cfg.CaptureContent != nil {
			span.SetAttributes(KeyOutputMessages.String(outputMessages(resp, t.cfg.CaptureContent)))
		}
		if err != nil {
			span.SetStatus(codes.Error, errorDescription(err, class))
		}
		if end.IsZero() {
			span.End()
		} else {
			span.End(trace.WithTimestamp(end))
		}
	} else {
		span.End()
	}
	ended = true
	if logging {
		t.logAttempt(ctx, req, a.attmpt, resp, err, class, end.Sub(a.start))
	}
	return resp, err
}
