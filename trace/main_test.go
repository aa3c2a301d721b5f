package trace

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const canary = "CANARY-7f3e9c" // stands for private prompt and answer text

// sdk is a recording SDK setup for one test.
type sdk struct {
	rec    *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newSDK(t *testing.T) *sdk {
	t.Helper()
	s := &sdk{rec: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.rec))
	s.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	t.Cleanup(func() {
		_ = s.tp.Shutdown(context.Background())
		_ = s.mp.Shutdown(context.Background())
	})
	return s
}

func mustNew(t *testing.T, cfg Config) *Tracer {
	t.Helper()
	tr, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tr
}

// attrs renders a span's or event's attributes as key -> emitted value.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func sameAttrs(t *testing.T, what string, got []attribute.KeyValue, want map[string]string) {
	t.Helper()
	g := attrs(got)
	var keys []string
	for k := range g {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := g[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if g[k] != want[k] {
			t.Errorf("%s attribute %s = %q, want %q", what, k, g[k], want[k])
		}
	}
}

func secs(d time.Duration) string { return attribute.Float64Value(d.Seconds()).String() }

// retryLoop is a stand-in for package retry: up to n attempts of next, each
// with portico.ContextWithAttempt after the first, reporting EventRetry and
// sleeping delay*i between attempts (in a synctest bubble, virtual time).
func retryLoop(next portico.Model, route string, n int, delay time.Duration) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		for i := 0; ; i++ {
			actx := ctx
			if i > 0 {
				actx = portico.ContextWithAttempt(ctx, portico.Attempt{Index: i, ID: route + "-" + string(rune('0'+i))})
			}
			resp, err := next.Generate(actx, req)
			if err == nil || !portico.ClassOf(err).Retryable() || i == n-1 {
				return resp, err
			}
			d := delay * time.Duration(i+1)
			portico.Observe(ctx, portico.Event{Kind: portico.EventRetry, Route: route, Attempt: i + 1,
				Class: portico.ClassOf(err), Delay: d})
			time.Sleep(d)
		}
	})
}

// fallbackTo is a stand-in for package fallback: primary, then on error the
// secondary with model name model, reporting EventFallback and setting
// Response.Route, Hops and Cost.
func fallbackTo(primary, secondary portico.Model, model string, cost float64) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		resp, err := primary.Generate(ctx, req)
		if err == nil {
			resp.Route = "a"
			return resp, nil
		}
		reason := portico.ClassOf(err).String()
		portico.Observe(ctx, portico.Event{Kind: portico.EventFallback, Route: "a", Class: portico.ClassOf(err), Reason: reason})
		r2 := req.Clone()
		r2.Model = model
		resp, err2 := secondary.Generate(ctx, r2)
		if err2 != nil {
			return nil, err2
		}
		resp.Route, resp.Hops, resp.Cost = "b", []portico.Hop{{Route: "a", Reason: reason, Err: err}}, cost
		return resp, nil
	})
}

// rateLimited is a stand-in for package ratelimit: waits d and reports it.
func rateLimited(next portico.Model, d time.Duration) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		time.Sleep(d)
		portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitWait, Delay: d})
		return next.Generate(ctx, req)
	})
}

// failing sleeps d and fails with a transient 503.
func failing(d time.Duration) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		time.Sleep(d)
		return nil, &portico.Error{Class: portico.Transient, Status: 503, Reason: "overloaded"}
	})
}

// answering sleeps ttft, streams the canary answer when asked, reports an
// accepted validation, and answers with the canary text and a tool call.
func answering(ttft time.Duration) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		time.Sleep(ttft)
		text := "the answer is " + canary
		if req.OnChunk != nil {
			if err := req.OnChunk(portico.Chunk{Text: text}); err != nil {
				return nil, err
			}
		}
		portico.Observe(ctx, portico.Event{Kind: portico.EventValidation, Route: "b", Reason: "accepted"})
		return &portico.Response{
			Text:         text,
			ToolCalls:    []portico.ToolCall{{ID: "call_1", Name: "lookup", Arguments: []byte(`{"q":"` + canary + `"}`)}},
			FinishReason: portico.FinishStop,
			Usage:        portico.Usage{InputTokens: 100, OutputTokens: 20, CachedInputTokens: 64},
			Model:        "gpt-4o-mini-2024-07-18",
			ID:           "chatcmpl-b1",
		}, nil
	})
}

// scenarioRequest is the canary-laden request the scenario sends.
func scenarioRequest(stream bool) *portico.Request {
	req := &portico.Request{
		Model: "gpt-4o",
		Messages: []portico.Message{
			portico.Text(portico.RoleSystem, "system says "+canary),
			portico.Text(portico.RoleUser, "user says "+canary),
		},
		MaxOutputTokens: 256,
		Identity:        portico.Identity{OperationID: "op-1", ClientKey: "client-" + canary},
	}
	if stream {
		req.OnChunk = func(portico.Chunk) error { return nil }
	}
	return req
}

// scenario builds: trace.Wrap -> rate limit (50 ms) -> fallback(
//
//	a: retry x3 -> WrapAttempt -> 503 after 10 ms (retry delays 100, 200 ms),
//	b: retry x3 -> WrapAttempt -> answer after 300 ms).
func scenario(tr *Tracer) portico.Model {
	a := retryLoop(tr.WrapAttempt(failing(10*time.Millisecond)), "a", 3, 100*time.Millisecond)
	b := retryLoop(tr.WrapAttempt(answering(300*time.Millisecond)), "b", 3, 100*time.Millisecond)
	return tr.Wrap(rateLimited(fallbackTo(a, b, "gpt-4o-mini", 0.0012), 50*time.Millisecond))
}

func containsCanary(s string) bool { return strings.Contains(s, canary) }
