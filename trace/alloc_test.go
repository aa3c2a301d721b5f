package trace

import (
	"context"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestAllocs pins the allocations per call of both layers, stacked, when
// nothing records: none with the no-op provider (the goal is at most one),
// and only the SDK's own two per span (non-recording span, context) when the
// SDK samples nothing: attributes are never built for a span that does not
// record.
func TestAllocs(t *testing.T) {
	never := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	defer never.Shutdown(context.Background())
	for _, tc := range []struct {
		name string
		tp   trace.TracerProvider
		want float64
	}{
		{"noop", noop.NewTracerProvider(), 0},
		{"sdk never sample", never, 4}, // 2 for each of the two spans
	} {
		tr := mustNew(t, Config{TracerProvider: tc.tp, MeterProvider: metricnoop.NewMeterProvider(), Provider: "openai"})
		m := tr.Wrap(tr.WrapAttempt(benchModel))
		ctx := context.Background()
		got := testing.AllocsPerRun(200, func() {
			if _, err := m.Generate(ctx, benchReq); err != nil {
				t.Fatal(err)
			}
		})
		if got != tc.want {
			t.Errorf("%s: allocs per call = %v, want %v", tc.name, got, tc.want)
		}
	}
}
