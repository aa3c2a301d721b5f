package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/route"
	"github.com/portico-llm/portico/trace"
	"github.com/portico-llm/portico/validate"
)

// streamer answers with eight chunks, streamed when the request asks for
// it: the cheapest streaming Model, so that a layer's own cost shows.
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

// BenchmarkStream measures each layer that watches a stream (retry, breaker,
// validate holding chunks back, fallback, router, cascade, trace's two
// layers) over a streamed call of eight chunks. It uses only APIs older
// than portico.StreamWatch, so the same file measures the layers before it.
// Beside ns/op it reports the locked thread's CPU time per call (cpu-ns/op),
// which the load of a shared machine does not inflate.
func BenchmarkStream(b *testing.B) {
	routes := []portico.Route{{Name: "a", Model: streamer}, {Name: "b", Model: streamer}}
	schema := streamReq.Clone()
	schema.Schema = &portico.Schema{Name: "a", JSON: []byte(`{"type":"object"}`)}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tr, err := trace.New(trace.Config{TracerProvider: tp, Provider: "openai"})
	if err != nil {
		b.Fatal(err)
	}
	router, err := route.NewRouter(route.RouterConfig{Routes: routes})
	if err != nil {
		b.Fatal(err)
	}
	cascade, err := route.NewCascade(route.CascadeConfig{Steps: []route.Step{{Route: routes[0]}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		m    portico.Model
		req  *portico.Request
	}{
		{"bare", streamer, streamReq},
		{"retry", retry.MustNew(retry.Config{}).Wrap(streamer), streamReq},
		{"retry/watchdog", retry.MustNew(retry.Config{Timeouts: retry.Timeouts{FirstChunk: time.Minute, ChunkGap: time.Minute}}).Wrap(streamer), streamReq},
		{"breaker", breaker.MustNew(breaker.Config{}).Wrap(streamer), streamReq},
		{"validate/held", validate.MustNew(validate.Config{}).Wrap(streamer), schema},
		{"fallback", fallback.MustNew(fallback.Config{Routes: routes}), streamReq},
		{"router", router, streamReq},
		{"cascade", cascade, streamReq},
		{"trace/request", tr.Wrap(streamer), streamReq},
		{"trace/attempt", tr.WrapAttempt(streamer), streamReq},
	} {
		b.Run(bc.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ctx := context.Background()
			if _, err := bc.m.Generate(ctx, bc.req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			t0 := threadCPU()
			for b.Loop() {
				bc.m.Generate(ctx, bc.req)
			}
			b.ReportMetric(float64(threadCPU()-t0)/float64(b.N), "cpu-ns/op")
		})
	}
}
