package trace_test

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/trace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// streamer answers with eight chunks, streamed when the request asks for it.
var streamer = portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	const text = `{"answer": "Paris, the capital of France"}`
	if req.OnChunk != nil {
		for i := 0; i < len(text); i += len(text)/8 + 1 {
			if err := req.OnChunk(portico.Chunk{Text: text[i:min(i+len(text)/8+1, len(text))]}); err != nil {
				return nil, err
			}
		}
	}
	return &portico.Response{Text: text, FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 10, OutputTokens: 8}}, nil
})

// streamReq asks for a streamed answer whose chunks the caller drops.
var streamReq = &portico.Request{
	Messages:        []portico.Message{portico.Text(portico.RoleUser, "What is the capital of France?")},
	MaxOutputTokens: 64,
	OnChunk:         func(portico.Chunk) error { return nil },
}

func benchStream(b *testing.B, m portico.Model, req *portico.Request) {
	b.Helper()
	ctx := context.Background()
	if _, err := m.Generate(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Generate(ctx, req)
	}
}

// BenchmarkStream: a streamed call through the request and attempt layers
// of a recording SDK provider (no exporter).
func BenchmarkStream(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tr, err := trace.New(trace.Config{TracerProvider: tp, Provider: "openai"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("request", func(b *testing.B) { benchStream(b, tr.Wrap(streamer), streamReq) })
	b.Run("attempt", func(b *testing.B) { benchStream(b, tr.WrapAttempt(streamer), streamReq) })
}
