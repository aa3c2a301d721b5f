package trace_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/route"
	"github.com/portico-llm/portico/stack"
	"github.com/portico-llm/portico/trace"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// requestSpan returns the last ended span (the request span) and its
// attributes by key.
func requestSpan(t *testing.T, rec *tracetest.SpanRecorder) (string, map[attribute.Key]string) {
	t.Helper()
	ended := rec.Ended()
	if len(ended) == 0 {
		t.Fatal("no span ended")
	}
	root := ended[len(ended)-1]
	m := map[attribute.Key]string{}
	for _, a := range root.Attributes() {
		m[a.Key] = a.Value.String()
	}
	return root.Name(), m
}

// TestHedgeLoserDoesNotNameTheAnswer: with a hedge to the next route, the
// hedge's attempt starts after the primary's; when the primary answers, the
// request span must name the primary's provider, server and model, not
// those of the latest attempt started (the canceled hedge).
func TestHedgeLoserDoesNotNameTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer tp.Shutdown(context.Background())
		tr, err := trace.New(trace.Config{TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		a := modeltest.NewFake(modeltest.Outcome{Latency: 300 * time.Millisecond,
			Response: &portico.Response{Text: "from a", Model: "gpt-4o", FinishReason: portico.FinishStop}})
		b := modeltest.NewFake(modeltest.Outcome{Latency: time.Second,
			Response: &portico.Response{Text: "from b", Model: "claude", FinishReason: portico.FinishStop}})
		s, err := stack.New(stack.Config{Tracer: tr, Hedge: &hedge.Config{Delay: 100 * time.Millisecond},
			Routes: []stack.Route{
				{Route: portico.Route{Name: "a", Model: a}, Trace: trace.Route{Provider: "openai", Model: "gpt-4o", ServerAddress: "a.example"}},
				{Route: portico.Route{Name: "b", Model: b}, Trace: trace.Route{Provider: "anthropic", Model: "claude", ServerAddress: "b.example"}},
			}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}})
		if err != nil || resp.Route != "a" || b.Count() != 1 {
			t.Fatalf("Generate = %+v, %v (b called %d times); want a's answer with one hedge to b", resp, err, b.Count())
		}
		name, attrs := requestSpan(t, rec)
		if name != "chat gpt-4o" || attrs["gen_ai.provider.name"] != "openai" || attrs["server.address"] != "a.example" ||
			attrs["gen_ai.request.model"] != "gpt-4o" {
			t.Errorf("request span %q provider %q server %q request model %q; want chat gpt-4o, openai, a.example, gpt-4o (route a answered)",
				name, attrs["gen_ai.provider.name"], attrs["server.address"], attrs["gen_ai.request.model"])
		}
	})
}

// TestCascadeFailedLastStepDoesNotNameTheAnswer: a cascade whose final step
// fails returns the cheap step's rejected answer (NoneAcceptedLast); the
// request span must name the cheap route, which answered, not the strong
// route whose attempt started last.
func TestCascadeFailedLastStepDoesNotNameTheAnswer(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tr, err := trace.New(trace.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	cheap := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "meh", Model: "small-1", FinishReason: portico.FinishStop}})
	strong := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
	tc := tr.ForRoute(trace.Route{Name: "cheap", Provider: "openai", Model: "small", ServerAddress: "cheap.example"})
	ts := tr.ForRoute(trace.Route{Name: "strong", Provider: "anthropic", Model: "big", ServerAddress: "strong.example"})
	c, err := route.NewCascade(route.CascadeConfig{Steps: []route.Step{
		{Route: portico.Route{Name: "cheap", Model: tc.WrapAttempt(cheap)}, Accept: func(*portico.Request, *portico.Response) float64 { return 0 }, Threshold: 0.5},
		{Route: portico.Route{Name: "strong", Model: ts.WrapAttempt(strong)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.Wrap(c).Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}})
	if err != nil || resp.Route != "cheap" {
		t.Fatalf("Generate = %+v, %v; want the cheap step's answer", resp, err)
	}
	name, attrs := requestSpan(t, rec)
	if name != "chat small" || attrs["gen_ai.provider.name"] != "openai" || attrs["server.address"] != "cheap.example" {
		t.Errorf("request span %q provider %q server %q; want chat small, openai, cheap.example (the cheap step answered)",
			name, attrs["gen_ai.provider.name"], attrs["server.address"])
	}
}
