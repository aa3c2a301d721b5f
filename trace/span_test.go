package trace

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestSpanTree pins the exact span tree of a streamed request that waits
// 50 ms at a rate limiter, fails three attempts on route a (two retries),
// falls back to route b and is answered there after 300 ms.
func TestSpanTree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		prices := &portico.Capabilities{InputPrice: 1e-6, CachedInputPrice: 0.5e-6, OutputPrice: 4e-6}
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, Provider: "openai", ServerAddress: "api.openai.com",
			ServerPort: 443, Pricing: prices})
		resp, err := scenario(tr).Generate(context.Background(), scenarioRequest(true))
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if resp.Route != "b" {
			t.Fatalf("resp.Route = %q, want b", resp.Route)
		}
		spans := s.rec.Ended()
		if len(spans) != 5 {
			t.Fatalf("len(spans) = %d, want 5 (4 attempts, then the request)", len(spans))
		}
		root := spans[4]
		if root.Name() != "chat gpt-4o" || root.Parent().IsValid() || root.SpanKind() != trace.SpanKindClient {
			t.Fatalf("root = %q kind %v parent valid %v, want client span \"chat gpt-4o\" without parent",
				root.Name(), root.SpanKind(), root.Parent().IsValid())
		}
		sameAttrs(t, "root", root.Attributes(), map[string]string{
			"gen_ai.operation.name":                "chat",
			"gen_ai.provider.name":                 "openai",
			"gen_ai.request.model":                 "gpt-4o",
			"gen_ai.request.max_tokens":            "256",
			"gen_ai.request.stream":                "true",
			"server.address":                       "api.openai.com",
			"server.port":                          "443",
			"portico.operation.id":                 "op-1",
			"gen_ai.response.model":                "gpt-4o-mini-2024-07-18",
			"gen_ai.response.id":                   "chatcmpl-b1",
			"gen_ai.usage.input_tokens":            "100",
			"gen_ai.usage.output_tokens":           "20",
			"gen_ai.usage.cache_read.input_tokens": "64",
			"gen_ai.response.finish_reasons":       `["stop"]`,
			"gen_ai.response.time_to_first_chunk":  secs(680 * time.Millisecond),
			"portico.route":                        "b",
			"portico.cost":                         "0.0012", // Response.Cost, set by the fallback
			"portico.attempts":                     "4",
			"portico.retry.count":                  "2",
			"portico.retry.reason":                 "transient",
			"portico.retry.delay":                  secs(200 * time.Millisecond),
			"portico.ratelimit.wait":               secs(50 * time.Millisecond),
			"portico.validation.result":            "accepted",
			"portico.fallback.source":              "a",
			"portico.fallback.reason":              "transient",
		})
		if got := root.EndTime().Sub(root.StartTime()); got != 680*time.Millisecond {
			t.Errorf("root duration = %v, want 680ms", got)
		}
		if root.Status().Code != codes.Unset {
			t.Errorf("root status = %v, want Unset", root.Status())
		}

		type wantEvent struct {
			name  string
			at    time.Duration // after the root's start
			attrs map[string]string
		}
		checkEvents := func(what string, sp sdktrace.ReadOnlySpan, want []wantEvent) {
			t.Helper()
			ev := sp.Events()
			if len(ev) != len(want) {
				t.Fatalf("%s: %d events, want %d: %v", what, len(ev), len(want), ev)
			}
			for i, w := range want {
				if ev[i].Name != w.name || ev[i].Time.Sub(root.StartTime()) != w.at {
					t.Errorf("%s event %d = %q at %v, want %q at %v", what, i, ev[i].Name, ev[i].Time.Sub(root.StartTime()), w.name, w.at)
				}
				sameAttrs(t, what+" event "+w.name, ev[i].Attributes, w.attrs)
			}
		}
		ms := time.Millisecond
		checkEvents("root", root, []wantEvent{
			{EventNameRateLimitWait, 50 * ms, map[string]string{"portico.ratelimit.wait": secs(50 * ms)}},
			{EventNameRetry, 60 * ms, map[string]string{"portico.route": "a", "portico.attempt.index": "1",
				"portico.retry.reason": "transient", "portico.retry.delay": secs(100 * ms)}},
			{EventNameRetry, 170 * ms, map[string]string{"portico.route": "a", "portico.attempt.index": "2",
				"portico.retry.reason": "transient", "portico.retry.delay": secs(200 * ms)}},
			{EventNameFallback, 380 * ms, map[string]string{"portico.fallback.source": "a",
				"portico.fallback.reason": "transient", "error.type": "transient"}},
			{EventNameFirstChunk, 680 * ms, map[string]string{
				"gen_ai.response.time_to_first_chunk": secs(680 * ms),
				"portico.ttft.ratelimit_wait":         secs(50 * ms),
				"portico.ttft.routing":                secs(330 * ms),
				"portico.ttft.provider":               secs(300 * ms)}},
		})

		// The attempts: children of the root, in order, each its own span id.
		seen := map[trace.SpanID]bool{root.SpanContext().SpanID(): true}
		type wantAttempt struct {
			name           string
			index          int
			start, end     time.Duration
			failed         bool
			extra          map[string]string
			firstChunkAt   time.Duration
			withFirstChunk bool
		}
		attempts := []wantAttempt{
			{name: "attempt gpt-4o", index: 0, start: 50 * ms, end: 60 * ms, failed: true},
			{name: "attempt gpt-4o", index: 1, start: 160 * ms, end: 170 * ms, failed: true,
				extra: map[string]string{"portico.attempt.id": "a-1", "http.request.resend_count": "1"}},
			{name: "attempt gpt-4o", index: 2, start: 370 * ms, end: 380 * ms, failed: true,
				extra: map[string]string{"portico.attempt.id": "a-2", "http.request.resend_count": "2"}},
			{name: "attempt gpt-4o-mini", index: 0, start: 380 * ms, end: 680 * ms, withFirstChunk: true, firstChunkAt: 680 * ms},
		}
		for i, w := range attempts {
			sp := spans[i]
			what := "attempt " + sp.Name()
			if sp.Name() != w.name || sp.SpanKind() != trace.SpanKindClient {
				t.Errorf("span %d = %q kind %v, want client %q", i, sp.Name(), sp.SpanKind(), w.name)
			}
			if sp.Parent().SpanID() != root.SpanContext().SpanID() || sp.SpanContext().TraceID() != root.SpanContext().TraceID() {
				t.Errorf("span %d parent = %v, want the root %v", i, sp.Parent().SpanID(), root.SpanContext().SpanID())
			}
			if seen[sp.SpanContext().SpanID()] {
				t.Errorf("span %d reuses span id %v", i, sp.SpanContext().SpanID())
			}
			seen[sp.SpanContext().SpanID()] = true
			if got := sp.StartTime().Sub(root.StartTime()); got != w.start {
				t.Errorf("span %d start = %v, want %v", i, got, w.start)
			}
			if got := sp.EndTime().Sub(root.StartTime()); got != w.end {
				t.Errorf("span %d end = %v, want %v", i, got, w.end)
			}
			// No gen_ai.* attribute: the request span is the one GenAI
			// inference span (it covers all retries), so usage counts once.
			want := map[string]string{
				"portico.attempt.model":    w.name[len("attempt "):],
				"portico.attempt.provider": "openai",
				"server.address":           "api.openai.com",
				"server.port":              "443",
				"portico.operation.id":     "op-1",
				"portico.attempt.index":    itoa(w.index),
			}
			for k, v := range w.extra {
				want[k] = v
			}
			var wantEvents []wantEvent
			if w.failed {
				want["error.type"] = "transient"
				want["http.response.status_code"] = "503"
				if sp.Status().Code != codes.Error || sp.Status().Description != "transient: overloaded" {
					t.Errorf("span %d status = %v, want Error \"transient: overloaded\"", i, sp.Status())
				}
			} else {
				want["portico.attempt.usage.input_tokens"] = "100"
				want["portico.attempt.usage.output_tokens"] = "20"
				want["portico.attempt.usage.cache_read.input_tokens"] = "64"
				want["portico.ttft.provider"] = secs(300 * ms)
				// (100-64)*1e-6 + 64*0.5e-6 + 20*4e-6 = 148e-6, from Pricing
				want["portico.attempt.cost"] = attribute.Float64Value(148e-6).String()
				wantEvents = []wantEvent{{EventNameFirstChunk, w.firstChunkAt,
					map[string]string{"portico.ttft.provider": secs(300 * ms)}}}
			}
			sameAttrs(t, what, sp.Attributes(), want)
			checkEvents(what, sp, wantEvents)
		}
	})
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestCallerRequestUntouched checks that the request layer streams through a
// clone: the caller's Request, its OnChunk included, is not modified.
func TestCallerRequestUntouched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
		var chunks int
		req := scenarioRequest(false)
		req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
		before := *req
		var seenReq *portico.Request
		m := tr.Wrap(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			seenReq = r
			return answering(0).Generate(ctx, r)
		}))
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if seenReq == req {
			t.Errorf("inner layer got the caller's *Request, want a clone")
		}
		if req.Model != before.Model || len(req.Messages) != len(before.Messages) || req.MaxOutputTokens != before.MaxOutputTokens {
			t.Errorf("caller's request changed: %+v", req)
		}
		if chunks != 1 {
			t.Errorf("caller's OnChunk called %d times, want 1", chunks)
		}
	})
}

// TestErrorSpan checks error.type and status on a failed request, and the
// sampling options taken from Request.Extra.
func TestErrorSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
		_, err := tr.Wrap(failing(time.Second)).Generate(context.Background(), &portico.Request{Model: "m",
			Extra: map[string]any{"temperature": 0.2, "top_p": 1, "seed": int64(42), "stop": "END"}})
		if portico.ClassOf(err) != portico.Transient {
			t.Fatalf("ClassOf(err) = %v, want transient", portico.ClassOf(err))
		}
		sp := s.rec.Ended()[0]
		sameAttrs(t, "failed request", sp.Attributes(), map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.request.stream": "false",
			"gen_ai.request.temperature": "0.2", "gen_ai.request.top_p": "1", "gen_ai.request.seed": "42",
			"error.type": "transient", "portico.attempts": "1",
		})
		if sp.Status().Code != codes.Error {
			t.Errorf("status = %v, want Error", sp.Status())
		}
	})
}

// TestUsageCountedOnce checks the rule of "Counted once" in the package
// documentation: a first attempt whose stream is cut after the provider
// reported (and billed) usage, then a retry that answers. Summing
// gen_ai.usage.* over every span gives the answer's usage exactly once (the
// request span is the only GenAI span); the failed attempt's billed tokens and
// cost appear on its own span under portico.attempt.*, and so does the
// answering attempt's.
func TestUsageCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		prices := &portico.Capabilities{InputPrice: 1e-6, OutputPrice: 4e-6}
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, Provider: "openai", Pricing: prices})
		calls := 0
		model := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			calls++
			if calls == 1 {
				return nil, &portico.Error{Class: portico.Transient, Reason: "stream cut",
					Usage: &portico.Usage{InputTokens: 50, OutputTokens: 10}}
			}
			return &portico.Response{Model: "m-1", FinishReason: portico.FinishStop,
				Usage: portico.Usage{InputTokens: 100, OutputTokens: 20}}, nil
		})
		m := tr.Wrap(retryLoop(tr.WrapAttempt(model), "m", 2, time.Millisecond))
		if _, err := m.Generate(context.Background(), &portico.Request{Model: "m"}); err != nil {
			t.Fatalf("Generate: %v", err)
		}
		spans := s.rec.Ended()
		if len(spans) != 3 {
			t.Fatalf("%d spans, want 3 (2 attempts, then the request)", len(spans))
		}
		var genAISpans, in, out int
		for _, sp := range spans {
			a := attrs(sp.Attributes())
			if _, ok := a["gen_ai.operation.name"]; ok {
				genAISpans++
			}
			for _, kv := range sp.Attributes() {
				switch kv.Key {
				case KeyInputTokens:
					in += int(kv.Value.AsInt64())
				case KeyOutputTokens:
					out += int(kv.Value.AsInt64())
				}
			}
		}
		if genAISpans != 1 || in != 100 || out != 20 {
			t.Errorf("over all spans: %d with gen_ai.operation.name, gen_ai.usage input %d output %d; want 1, 100, 20",
				genAISpans, in, out)
		}
		answerCost := attribute.Float64Value(prices.Cost(portico.Usage{InputTokens: 100, OutputTokens: 20})).String() // 180e-6
		sameAttrs(t, "failed attempt", spans[0].Attributes(), map[string]string{
			"portico.attempt.index":               "0",
			"portico.attempt.model":               "m",
			"portico.attempt.provider":            "openai",
			"error.type":                          "transient",
			"portico.attempt.usage.input_tokens":  "50",
			"portico.attempt.usage.output_tokens": "10",
			"portico.attempt.cost":                attribute.Float64Value(prices.Cost(portico.Usage{InputTokens: 50, OutputTokens: 10})).String(), // 90e-6
		})
		sameAttrs(t, "answering attempt", spans[1].Attributes(), map[string]string{
			"portico.attempt.index":               "1",
			"portico.attempt.id":                  "m-1",
			"http.request.resend_count":           "1",
			"portico.attempt.model":               "m",
			"portico.attempt.provider":            "openai",
			"portico.attempt.usage.input_tokens":  "100",
			"portico.attempt.usage.output_tokens": "20",
			"portico.attempt.cost":                answerCost,
		})
		sameAttrs(t, "request", spans[2].Attributes(), map[string]string{
			"gen_ai.operation.name":          "chat",
			"gen_ai.provider.name":           "openai",
			"gen_ai.request.model":           "m",
			"gen_ai.request.stream":          "false",
			"gen_ai.response.model":          "m-1",
			"gen_ai.usage.input_tokens":      "100",
			"gen_ai.usage.output_tokens":     "20",
			"gen_ai.response.finish_reasons": `["stop"]`,
			"portico.cost":                   answerCost,
			"portico.attempts":               "2",
			"portico.retry.count":            "1",
			"portico.retry.reason":           "transient",
			"portico.retry.delay":            secs(time.Millisecond),
		})
	})
}

// TestRefusedSpan: a request a layer refused says who on its span
// (portico.refused_by), so that "your plan" and "we are saturated" are
// counted apart.
func TestRefusedSpan(t *testing.T) {
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	refused := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: portico.RateLimited, RefusedBy: portico.ClientLimit, NotSent: true}
	})
	tr.Wrap(refused).Generate(context.Background(), &portico.Request{Model: "m"})
	sameAttrs(t, "refused request", s.rec.Ended()[0].Attributes(), map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.request.stream": "false",
		"error.type": "rate_limited", "portico.refused_by": "client_limit", "portico.attempts": "0",
	})
}
