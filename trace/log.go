package trace

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/portico-llm/portico"
)

const (
	levelOK     = slog.LevelInfo // accepted answers
	levelFailed = slog.LevelWarn // failures
)

// Log record messages: one "portico.request" record per request (request
// layer) and one "portico.attempt" record per attempt (attempt layer).
const (
	LogRequest = "portico.request"
	LogAttempt = "portico.attempt"
)

// status returns the HTTP status of the first *portico.Error in err, or 0.
func status(err error) int {
	var pe *portico.Error
	if errors.As(err, &pe) {
		return pe.Status
	}
	return 0
}

// commonAttrs are the fields both records share.
func (t *Tracer) commonAttrs(a []slog.Attr, req *portico.Request, l labels, resp *portico.Response, err error,
	class portico.Class, dur time.Duration) []slog.Attr {
	a = append(a,
		slog.String("operation_id", req.Identity.OperationID),
		slog.String("provider", l.provider),
		slog.String("model", l.model),
		slog.String("outcome", outcome(class)),
		slog.String("error_class", class.String()),
		slog.Int("status", status(err)),
		slog.Duration("latency", dur),
	)
	if resp != nil {
		a = append(a,
			slog.String("response_model", resp.Model),
			slog.String("response_id", resp.ID),
			slog.Int("input_tokens", resp.Usage.InputTokens),
			slog.Int("output_tokens", resp.Usage.OutputTokens),
			slog.Int("cached_input_tokens", resp.Usage.CachedInputTokens),
			slog.Float64("cost", t.cost(resp)),
		)
	}
	return a
}

// logs reports whether t logs the records of a call with ctx.
func (t *Tracer) logs(ctx context.Context) bool { return t.log != nil && t.log.Enabled(ctx, levelOK) }

// routeOf returns the route that answered resp, "" without one.
func routeOf(resp *portico.Response) string {
	if resp == nil {
		return ""
	}
	return resp.Route
}

func level(class portico.Class) slog.Level {
	if class == portico.OK {
		return levelOK
	}
	return levelFailed
}

// logRequest writes the request record. It carries no content: only ids,
// names, classes, counts and durations.
func (t *Tracer) logRequest(ctx context.Context, req *portico.Request, resp *portico.Response, err error,
	class portico.Class, dur time.Duration, s summary) {
	a := t.commonAttrs(make([]slog.Attr, 0, 24), req, s.labels, resp, err, class, dur)
	a = append(a,
		slog.String("route", routeOf(resp)),
		slog.Int("attempts", s.attempts),
		slog.String("fallback_source", s.fallbackSource),
		slog.String("fallback_reason", s.fallbackReason),
		slog.String("validation", s.validation),
		slog.String("breaker_state", s.breakerState),
		slog.Duration("ratelimit_wait", s.rlWait),
		slog.Duration("ttft", s.ttft),
	)
	t.log.LogAttrs(ctx, level(class), LogRequest, a...)
}

// logAttempt writes the attempt record.
func (t *Tracer) logAttempt(ctx context.Context, req *portico.Request, model string, at portico.Attempt, resp *portico.Response,
	err error, class portico.Class, dur time.Duration) {
	a := t.commonAttrs(make([]slog.Attr, 0, 16), req, labels{provider: t.cfg.Provider, model: model}, resp, err, class, dur)
	a = append(a, slog.String("attempt_id", at.ID), slog.Int("attempt", at.Index))
	t.log.LogAttrs(ctx, level(class), LogAttempt, a...)
}
