package trace_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
	"github.com/portico-llm/portico/trace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// TestRealStackSpanTree pins the exact span tree, attributes and events of a
// streamed request through the real layers (package stack: trace, a
// per-client rate limiter, fallback over routes a and b, each with breaker,
// retry, the attempt layer and validation) over modeltest fakes, in virtual
// time. A first request from the same client empties its one-request bucket
// (10 per second), so the traced request waits 100 ms at the limiter; then
// route a fails with 503 after 10 ms on each of three attempts (two retries,
// exponential backoff 100 ms then 200 ms), its breaker (one failure trips it)
// opens, the group falls back to b, which streams its answer 300 ms after it
// is called.
func TestRealStackSpanTree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer tp.Shutdown(context.Background())
		tr, err := trace.New(trace.Config{TracerProvider: tp, Provider: "openai", ServerAddress: "api.openai.com"})
		if err != nil {
			t.Fatal(err)
		}
		const secret = "CANARY-real-stack"
		a := modeltest.NewFake(modeltest.Answer("warm-up"), modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 10 * time.Millisecond})
		b := modeltest.NewFake(modeltest.Outcome{TTFT: 300 * time.Millisecond, Chunks: []string{"fine " + secret},
			Response: &portico.Response{ID: "chatcmpl-b1", Text: "fine " + secret, FinishReason: portico.FinishStop,
				Model: "gpt-4o-mini-2024-07-18", Usage: portico.Usage{InputTokens: 100, OutputTokens: 20, CachedInputTokens: 64}}})
		ra := stack.Route{Route: portico.Route{Name: "a", Model: a, ModelName: "gpt-4o"},
			Breaker: breaker.Config{Trip: breaker.ConsecutiveFailures(1), OpenFor: time.Minute},
			Retry:   retry.Config{MaxAttempts: 3, Backoff: retry.Backoff{Schedule: retry.Exponential, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}}}
		rb := stack.Route{Route: portico.Route{Name: "b", Model: b, ModelName: "gpt-4o-mini"}}
		s, err := stack.New(stack.Config{Routes: []stack.Route{ra, rb}, Tracer: tr,
			Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 10, RequestBurst: 1, Period: time.Second}, Mode: ratelimit.Wait}})
		if err != nil {
			t.Fatal(err)
		}
		client := portico.Identity{OperationID: "op-1", ClientKey: "client-1"}
		if _, err := s.Generate(context.Background(), &portico.Request{Model: "gpt-4o", Identity: client,
			Messages: []portico.Message{portico.Text(portico.RoleUser, "warm up")}}); err != nil {
			t.Fatalf("warm-up request: %v", err)
		}
		warm := len(rec.Ended())
		req := &portico.Request{Model: "gpt-4o", MaxOutputTokens: 256,
			Messages: []portico.Message{portico.Text(portico.RoleUser, "user says "+secret)},
			Identity: client,
			OnChunk:  func(portico.Chunk) error { return nil }}
		resp, err := s.Generate(context.Background(), req)
		if err != nil || resp.Route != "b" || len(resp.Hops) != 1 || resp.Hops[0].Route != "a" {
			t.Fatalf("Generate = %+v, %v; want b's answer after one hop from a", resp, err)
		}
		if a.Count() != 4 || b.Count() != 1 {
			t.Fatalf("calls: a %d, b %d; want 4 (warm-up, then 3 attempts), 1", a.Count(), b.Count())
		}

		spans := rec.Ended()[warm:]
		if len(spans) != 5 {
			t.Fatalf("%d spans, want 5 (3 attempts on a, 1 on b, then the request)", len(spans))
		}
		root := spans[4]
		t0 := root.StartTime()
		ms := time.Millisecond
		at := func(d time.Duration) string { return attribute.Float64Value(d.Seconds()).String() }
		common := map[string]string{ // both kinds of span
			"server.address":       "api.openai.com",
			"portico.operation.id": "op-1",
		}
		// The request span alone is a GenAI inference span: the GenAI
		// conventions give the logical operation, all retries included, one
		// span, so gen_ai.* (usage above all) is counted once per request.
		genAI := map[string]string{
			"gen_ai.operation.name":     "chat",
			"gen_ai.provider.name":      "openai",
			"gen_ai.request.max_tokens": "256",
			"gen_ai.request.stream":     "true",
		}
		answer := map[string]string{
			"gen_ai.response.id":                   "chatcmpl-b1",
			"gen_ai.response.model":                "gpt-4o-mini-2024-07-18",
			"gen_ai.usage.input_tokens":            "100",
			"gen_ai.usage.output_tokens":           "20",
			"gen_ai.usage.cache_read.input_tokens": "64",
			"gen_ai.response.finish_reasons":       `["stop"]`,
		}
		with := func(maps ...map[string]string) map[string]string {
			m := map[string]string{}
			for _, x := range maps {
				for k, v := range x {
					m[k] = v
				}
			}
			return m
		}
		type event struct {
			name  string
			at    time.Duration
			attrs map[string]string
		}
		type span struct {
			name       string
			root       bool
			start, end time.Duration
			status     codes.Code
			desc       string
			attrs      map[string]string
			events     []event
		}
		failed := func(i int) map[string]string {
			m := with(common, map[string]string{"portico.attempt.model": "gpt-4o", "portico.attempt.provider": "openai", "portico.route": "a", "error.type": "transient",
				"http.response.status_code": "503", "portico.attempt.index": itoa(i)})
			if i > 0 {
				m["http.request.resend_count"] = itoa(i)
				m["portico.attempt.id"] = "(retry id)"
			}
			return m
		}
		want := []span{
			{name: "attempt gpt-4o", start: 100 * ms, end: 110 * ms, status: codes.Error, desc: "transient: injected status", attrs: failed(0)},
			{name: "attempt gpt-4o", start: 210 * ms, end: 220 * ms, status: codes.Error, desc: "transient: injected status", attrs: failed(1)},
			{name: "attempt gpt-4o", start: 420 * ms, end: 430 * ms, status: codes.Error, desc: "transient: injected status", attrs: failed(2)},
			{name: "attempt gpt-4o-mini", start: 430 * ms, end: 730 * ms, status: codes.Unset,
				attrs: with(common, map[string]string{"portico.attempt.model": "gpt-4o-mini", "portico.attempt.provider": "openai", "portico.route": "b", "portico.attempt.index": "0",
					"portico.attempt.usage.input_tokens": "100", "portico.attempt.usage.output_tokens": "20",
					"portico.attempt.usage.cache_read.input_tokens": "64", "portico.ttft.provider": at(300 * ms)}),
				events: []event{{trace.EventNameFirstChunk, 730 * ms, map[string]string{"portico.ttft.provider": at(300 * ms)}}}},
			{name: "chat gpt-4o", root: true, start: 0, end: 730 * ms, status: codes.Unset,
				attrs: with(common, genAI, answer, map[string]string{
					"gen_ai.request.model":                "gpt-4o",
					"gen_ai.response.time_to_first_chunk": at(730 * ms),
					"portico.ratelimit.wait":              at(100 * ms),
					"portico.route":                       "b",
					"portico.attempts":                    "4",
					"portico.retry.count":                 "2",
					"portico.retry.reason":                "transient",
					"portico.retry.delay":                 at(200 * ms),
					"portico.breaker.state":               "open",
					"portico.validation.result":           "accepted",
					"portico.fallback.source":             "a",
					"portico.fallback.reason":             "transient",
				}),
				events: []event{
					// The limiter reports its wait when it begins, naming the bucket.
					{trace.EventNameRateLimitWait, 0, map[string]string{"portico.route": "gpt-4o",
						"portico.ratelimit.wait": at(100 * ms), "portico.ratelimit.reason": "requests"}},
					// The retry layer names its budget's destination: the request's model.
					{trace.EventNameRetry, 110 * ms, map[string]string{"portico.route": "a", "portico.attempt.index": "1",
						"portico.retry.reason": "transient", "portico.retry.delay": at(100 * ms), "portico.retry.delay_source": "backoff"}},
					{trace.EventNameRetry, 220 * ms, map[string]string{"portico.route": "a", "portico.attempt.index": "2",
						"portico.retry.reason": "transient", "portico.retry.delay": at(200 * ms), "portico.retry.delay_source": "backoff"}},
					{trace.EventNameBreakerState, 430 * ms, map[string]string{"portico.route": "a", "portico.breaker.state": "open"}},
					{trace.EventNameFallback, 430 * ms, map[string]string{"portico.fallback.source": "a",
						"portico.fallback.reason": "transient", "error.type": "transient"}},
					{trace.EventNameLayerFirstChunk, 730 * ms, map[string]string{"portico.layer.time_to_first_chunk": at(300 * ms)}},
					{trace.EventNameFirstChunk, 730 * ms, map[string]string{
						"gen_ai.response.time_to_first_chunk": at(730 * ms),
						"portico.ttft.ratelimit_wait":         at(100 * ms),
						"portico.ttft.routing":                at(330 * ms),
						"portico.ttft.provider":               at(300 * ms)}},
				}},
		}
		ids := map[oteltrace.SpanID]bool{}
		retryIDs := map[string]bool{}
		for i, w := range want {
			sp := spans[i]
			if sp.Name() != w.name || sp.SpanKind() != oteltrace.SpanKindClient {
				t.Errorf("span %d = %q kind %v, want client %q", i, sp.Name(), sp.SpanKind(), w.name)
			}
			if w.root {
				if sp.Parent().IsValid() {
					t.Errorf("span %d: parent %v, want none", i, sp.Parent().SpanID())
				}
			} else if sp.Parent().SpanID() != root.SpanContext().SpanID() || sp.SpanContext().TraceID() != root.SpanContext().TraceID() {
				t.Errorf("span %d: parent %v, want the request span %v", i, sp.Parent().SpanID(), root.SpanContext().SpanID())
			}
			if ids[sp.SpanContext().SpanID()] {
				t.Errorf("span %d reuses span id %v", i, sp.SpanContext().SpanID())
			}
			ids[sp.SpanContext().SpanID()] = true
			if s, e := sp.StartTime().Sub(t0), sp.EndTime().Sub(t0); s != w.start || e != w.end {
				t.Errorf("span %d: %v..%v, want %v..%v", i, s, e, w.start, w.end)
			}
			if st := sp.Status(); st.Code != w.status || st.Description != w.desc {
				t.Errorf("span %d status = %v, want %v %q", i, st, w.status, w.desc)
			}
			got := emitted(sp.Attributes())
			if id, ok := got["portico.attempt.id"]; ok && w.attrs["portico.attempt.id"] == "(retry id)" {
				// Process-wide sequence ids ("a-<n>"): pinned by form and uniqueness.
				if !strings.HasPrefix(id, "a-") || retryIDs[id] {
					t.Errorf("span %d portico.attempt.id = %q, want a fresh \"a-...\" id", i, id)
				}
				retryIDs[id] = true
				got["portico.attempt.id"] = "(retry id)"
			}
			sameMap(t, "span "+itoa(i)+" attribute", got, w.attrs)
			ev := sp.Events()
			if len(ev) != len(w.events) {
				t.Errorf("span %d: %d events, want %d: %v", i, len(ev), len(w.events), ev)
				continue
			}
			for j, we := range w.events {
				if ev[j].Name != we.name || ev[j].Time.Sub(t0) != we.at {
					t.Errorf("span %d event %d = %q at %v, want %q at %v", i, j, ev[j].Name, ev[j].Time.Sub(t0), we.name, we.at)
				}
				sameMap(t, "span "+itoa(i)+" event "+we.name+" attribute", emitted(ev[j].Attributes), we.attrs)
			}
		}
		for i, sp := range spans { // nothing private, anywhere
			for _, kv := range sp.Attributes() {
				if strings.Contains(kv.Value.String(), secret) {
					t.Errorf("span %d attribute %s carries content", i, kv.Key)
				}
			}
			for _, ev := range sp.Events() {
				for _, kv := range ev.Attributes {
					if strings.Contains(kv.Value.String(), secret) {
						t.Errorf("span %d event %s attribute %s carries content", i, ev.Name, kv.Key)
					}
				}
			}
		}
	})
}

func itoa(i int) string { return string(rune('0' + i)) }

func emitted(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// sameMap reports every key whose value differs between got and want,
// including keys missing from either.
func sameMap(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(got)+len(want))
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if g, w := got[k], want[k]; g != w {
			t.Errorf("%s %s = %q, want %q", what, k, g, w)
		}
	}
}
