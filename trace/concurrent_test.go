package trace

import (
	"context"
	"sync"
	"testing"

	"github.com/portico-llm/portico"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestConcurrent runs 8 requests at once through both layers and a tail
// sampler (ratio 1), each request's inner layer reporting 50 retry events
// from each of 4 goroutines (as a hedging layer might): under -race, and
// with exact counts of spans and folded retries.
func TestConcurrent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	ts, err := NewTailSampler(TailConfig{Next: rec, Ratio: 1})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ts))
	defer tp.Shutdown(context.Background())
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: tp, MeterProvider: s.mp})
	inner := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 50 {
					portico.Observe(ctx, portico.Event{Kind: portico.EventRetry, Class: portico.Transient})
				}
			})
		}
		wg.Wait()
		return &portico.Response{FinishReason: portico.FinishStop}, nil
	})
	m := tr.Wrap(tr.WrapAttempt(inner))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := m.Generate(context.Background(), &portico.Request{Model: "m"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	spans := rec.Ended()
	if len(spans) != 16 {
		t.Fatalf("%d spans exported, want 16", len(spans))
	}
	roots := 0
	for _, sp := range spans {
		if sp.Parent().IsValid() {
			continue
		}
		roots++
		if got := attrs(sp.Attributes())["portico.retry.count"]; got != "200" {
			t.Errorf("root portico.retry.count = %q, want 200", got)
		}
	}
	if roots != 8 {
		t.Errorf("%d roots, want 8", roots)
	}
	if st := ts.Stats(); st.Kept != 8 {
		t.Errorf("tail sampler kept %d traces, want 8", st.Kept)
	}
}
