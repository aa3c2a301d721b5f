package trace_test

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/trace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestReasoningTokensOnSpans: an answer's reasoning tokens are the request
// span's gen_ai.usage.reasoning.output_tokens (the GenAI conventions'
// name, OpenTelemetry semantic-conventions incubating
// ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: "SHOULD be included in
// gen_ai.usage.output_tokens") and the attempt span's
// portico.attempt.usage.reasoning.output_tokens; an answer without any
// carries neither.
func TestReasoningTokensOnSpans(t *testing.T) {
	for _, reasoning := range []int{40, 0} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		tr, err := trace.New(trace.Config{TracerProvider: tp, Provider: "anthropic"})
		if err != nil {
			t.Fatal(err)
		}
		adapter := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			return &portico.Response{Text: "hi", FinishReason: portico.FinishStop,
				Usage: portico.Usage{InputTokens: 10, OutputTokens: 50, ReasoningTokens: reasoning}}, nil
		})
		m := portico.Chain(adapter, tr.Wrap, tr.WrapAttempt)
		if _, err := m.Generate(t.Context(), &portico.Request{Model: "claude", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}); err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{"attempt claude": int64(reasoning), "chat claude": int64(reasoning)}
		for _, s := range rec.Ended() {
			var got int64
			for _, kv := range s.Attributes() {
				if kv.Key == trace.KeyReasoningTokens || kv.Key == trace.KeyAttemptReasoningTokens {
					got = kv.Value.AsInt64()
					if (kv.Key == trace.KeyReasoningTokens) != (s.Name() == "chat claude") {
						t.Errorf("span %q carries %s", s.Name(), kv.Key)
					}
				}
			}
			if w, ok := want[s.Name()]; !ok || got != w {
				t.Errorf("span %q: reasoning tokens %d, want %d (known span: %v)", s.Name(), got, w, ok)
			}
		}
		_ = tp.Shutdown(context.Background())
	}
}
