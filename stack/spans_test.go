package stack

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/trace"
)

// spanLines renders each ended span as its name and its sorted attributes.
func spanLines(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		var kv []string
		for _, a := range s.Attributes() {
			kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
		}
		sort.Strings(kv)
		out = append(out, fmt.Sprintf("%q: %s", s.Name(), strings.Join(kv, " ")))
	}
	return out
}

// twoRoutes builds a traced stack of an OpenAI primary that fails (503, one
// attempt) and an Anthropic fallback that answers; fb is the fallback's Route
// to adjust.
func twoRoutes(t *testing.T, fb func(*Route)) (*Stack, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr, err := trace.New(trace.Config{TracerProvider: tp, Provider: "openai", ServerAddress: "api.openai.com", ServerPort: 443})
	if err != nil {
		t.Fatal(err)
	}
	primary := Route{Route: portico.Route{Name: "primary", Model: modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503))),
		Capabilities: portico.Capabilities{Provider: "openai"}, ModelName: "gpt-4o"}, Skip: SkipRetry}
	fallback := Route{Route: portico.Route{Name: "fallback", Model: modeltest.NewFake(modeltest.Answer("hi")),
		Capabilities: portico.Capabilities{Provider: "anthropic"}, ModelName: "claude-sonnet-4"},
		Trace: trace.Route{ServerAddress: "api.anthropic.com", ServerPort: 443}}
	if fb != nil {
		fb(&fallback)
	}
	s, err := New(Config{Routes: []Route{primary, fallback}, Tracer: tr})
	if err != nil {
		t.Fatal(err)
	}
	return s, rec, tp
}

// TestFallbackSpansNameTheAnsweringRoute: when the fallback answers, the
// request span carries its provider, server and model (the request names
// none), and each attempt span its own route and provider.
func TestFallbackSpansNameTheAnsweringRoute(t *testing.T) {
	s, rec, tp := twoRoutes(t, nil)
	resp, err := s.Generate(context.Background(), hello)
	if err != nil || resp.Route != "fallback" {
		t.Fatalf("Generate = %+v, %v; want the fallback's answer", resp, err)
	}
	tp.Shutdown(context.Background())
	want := []string{
		`"attempt gpt-4o": error.type=transient http.response.status_code=503 portico.attempt.index=0 portico.attempt.model=gpt-4o portico.attempt.provider=openai portico.route=primary server.address=api.openai.com server.port=443`,
		`"attempt claude-sonnet-4": portico.attempt.index=0 portico.attempt.model=claude-sonnet-4 portico.attempt.provider=anthropic portico.attempt.usage.input_tokens=0 portico.attempt.usage.output_tokens=1 portico.route=fallback server.address=api.anthropic.com server.port=443`,
		`"chat claude-sonnet-4": gen_ai.operation.name=chat gen_ai.provider.name=anthropic gen_ai.request.max_tokens=16 gen_ai.request.model=claude-sonnet-4 gen_ai.request.stream=false gen_ai.response.finish_reasons=["stop"] gen_ai.response.model=claude-sonnet-4 gen_ai.usage.input_tokens=0 gen_ai.usage.output_tokens=1 portico.attempts=2 portico.fallback.reason=transient portico.fallback.source=primary portico.route=fallback portico.validation.result=accepted server.address=api.anthropic.com server.port=443`,
	}
	if got := spanLines(rec.Ended()); !slices.Equal(got, want) {
		t.Errorf("spans =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRouteTraceModel: a route without ModelName (its adapter's default
// model) names its model in Trace.Model, and spans take it from there.
func TestRouteTraceModel(t *testing.T) {
	s, rec, tp := twoRoutes(t, func(r *Route) {
		r.ModelName = ""
		r.Trace.Model = "claude-sonnet-4"
		r.Trace.Provider = "gcp.vertex_ai"
	})
	if _, err := s.Generate(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	tp.Shutdown(context.Background())
	spans := rec.Ended()
	attr := func(sp sdktrace.ReadOnlySpan, k attribute.Key) string {
		for _, a := range sp.Attributes() {
			if a.Key == k {
				return a.Value.String()
			}
		}
		return ""
	}
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	at, rq := spans[1], spans[2]
	if at.Name() != "attempt claude-sonnet-4" || attr(at, trace.KeyAttemptModel) != "claude-sonnet-4" || attr(at, trace.KeyAttemptProvider) != "gcp.vertex_ai" {
		t.Errorf("fallback attempt span %q model %q provider %q; want attempt claude-sonnet-4, claude-sonnet-4, gcp.vertex_ai",
			at.Name(), attr(at, trace.KeyAttemptModel), attr(at, trace.KeyAttemptProvider))
	}
	if rq.Name() != "chat claude-sonnet-4" || attr(rq, trace.KeyRequestModel) != "claude-sonnet-4" || attr(rq, trace.KeyProviderName) != "gcp.vertex_ai" {
		t.Errorf("request span %q model %q provider %q; want chat claude-sonnet-4, claude-sonnet-4, gcp.vertex_ai",
			rq.Name(), attr(rq, trace.KeyRequestModel), attr(rq, trace.KeyProviderName))
	}
}
