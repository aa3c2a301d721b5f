package trace

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// discard is a SpanExporter that drops everything, so benchmarks measure
// span production, not storage.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

var benchResp = &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Model: "gpt-4o-2024-08-06",
	Usage: portico.Usage{InputTokens: 120, OutputTokens: 30, CachedInputTokens: 64}}

var benchModel = portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
	return benchResp, nil
})

var benchReq = &portico.Request{Model: "gpt-4o", MaxOutputTokens: 256,
	Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}

func sdkProvider(s sdktrace.Sampler) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSampler(s),
		sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(discard{})))
}

func benchLayer(b *testing.B, tp trace.TracerProvider) {
	tr, err := New(Config{TracerProvider: tp, MeterProvider: metricnoop.NewMeterProvider(), Provider: "openai",
		ServerAddress: "api.openai.com"})
	if err != nil {
		b.Fatal(err)
	}
	m := tr.Wrap(benchModel)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(ctx, benchReq); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrap measures the request layer around a model that answers at
// once: no-op tracer provider, SDK never sampling, SDK always sampling; and
// BareSDK, a hand-written span with the same name, kind and attributes, the
// 1.1x reference for AlwaysSample.
func BenchmarkWrap(b *testing.B) {
	b.Run("NoopProvider", func(b *testing.B) { benchLayer(b, noop.NewTracerProvider()) })
	// otel's global delegating provider before any SDK is installed: Start is
	// skipped after the first call, while no otel.SetTracerProvider happened.
	b.Run("GlobalProviderUnset", func(b *testing.B) { benchLayer(b, otel.GetTracerProvider()) })
	// The zero Config (global tracer and meter providers), nothing installed.
	b.Run("ZeroConfig", func(b *testing.B) {
		tr, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		m := tr.Wrap(tr.WrapAttempt(benchModel))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Generate(ctx, benchReq); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BareNoopProvider", func(b *testing.B) {
		tracer := noop.NewTracerProvider().Tracer(ScopeName)
		ctx := context.Background()
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
		b.ReportAllocs()
		for b.Loop() {
			cctx, span := tracer.Start(ctx, "chat gpt-4o", opts...)
			if _, err := benchModel.Generate(cctx, benchReq); err != nil {
				b.Fatal(err)
			}
			span.End()
		}
	})
	// The warning: attributes passed at Start cost even when nothing
	// records.
	b.Run("BareNoopProviderWithAttributes", func(b *testing.B) {
		tracer := noop.NewTracerProvider().Tracer(ScopeName)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			bareSpan(b, tracer, ctx)
		}
	})
	b.Run("SDKNeverSample", func(b *testing.B) {
		tp := sdkProvider(sdktrace.NeverSample())
		defer tp.Shutdown(context.Background())
		benchLayer(b, tp)
	})
	b.Run("SDKAlwaysSample", func(b *testing.B) {
		tp := sdkProvider(sdktrace.AlwaysSample())
		defer tp.Shutdown(context.Background())
		benchLayer(b, tp)
	})
	b.Run("BareSDKAlwaysSample", func(b *testing.B) {
		tp := sdkProvider(sdktrace.AlwaysSample())
		defer tp.Shutdown(context.Background())
		tracer := tp.Tracer(ScopeName)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			bareSpan(b, tracer, ctx)
		}
	})
}

// bareSpan is what a user would write by hand: one span with the layer's
// name, kind and attributes, passed at start, around the model call.
func bareSpan(b *testing.B, tracer trace.Tracer, ctx context.Context) {
	req := benchReq
	cctx, span := tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			KeyOperationName.String("chat"),
			KeyProviderName.String("openai"),
			KeyRequestModel.String(req.Model),
			KeyRequestMaxTokens.Int(req.MaxOutputTokens),
			KeyRequestStream.Bool(false),
			KeyServerAddress.String("api.openai.com")))
	resp, err := benchModel.Generate(cctx, req)
	if err != nil {
		b.Fatal(err)
	}
	span.SetAttributes(
		KeyResponseModel.String(resp.Model),
		KeyInputTokens.Int(resp.Usage.InputTokens),
		KeyOutputTokens.Int(resp.Usage.OutputTokens),
		KeyCacheReadTokens.Int(resp.Usage.CachedInputTokens),
		KeyFinishReasons.StringSlice([]string{string(resp.FinishReason)}),
		KeyAttempts.Int(1),
	)
	span.End()
}

// BenchmarkOverheadRatio interleaves the request layer and the bare span in
// one loop, so both see the same machine load, and reports each one's
// ns/op and their ratio (layer/bare): the figure the 1.1x goal is about. The
// no-op pair compares the layer with a bare no-op Start/End.
func BenchmarkOverheadRatio(b *testing.B) {
	// run times batches of k calls of each, alternating which goes first.
	run := func(b *testing.B, k int, tp trace.TracerProvider, bare func(ctx context.Context)) {
		tr, err := New(Config{TracerProvider: tp, MeterProvider: metricnoop.NewMeterProvider(), Provider: "openai",
			ServerAddress: "api.openai.com"})
		if err != nil {
			b.Fatal(err)
		}
		m := tr.Wrap(benchModel)
		ctx := context.Background()
		var layer, plain []time.Duration
		for i := 0; b.Loop(); i++ {
			first, second := func() {
				for range k {
					if _, err := m.Generate(ctx, benchReq); err != nil {
						b.Fatal(err)
					}
				}
			}, func() {
				for range k {
					bare(ctx)
				}
			}
			if i%2 == 1 { // alternate the order, so neither always runs warm
				first, second = second, first
			}
			t0 := time.Now()
			first()
			t1 := time.Now()
			second()
			t2 := time.Now()
			if i%2 == 1 {
				plain, layer = append(plain, t1.Sub(t0)), append(layer, t2.Sub(t1))
			} else {
				layer, plain = append(layer, t1.Sub(t0)), append(plain, t2.Sub(t1))
			}
		}
		// Medians, robust to the preemptions of a shared machine.
		ml, mp := median(layer)/time.Duration(k), median(plain)/time.Duration(k)
		b.ReportMetric(float64(ml.Nanoseconds()), "layer-median-ns")
		b.ReportMetric(float64(mp.Nanoseconds()), "bare-median-ns")
		b.ReportMetric(float64(ml)/float64(mp), "ratio")
	}
	b.Run("Noop", func(b *testing.B) {
		tracer := noop.NewTracerProvider().Tracer(ScopeName)
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
		run(b, 200, noop.NewTracerProvider(), func(ctx context.Context) {
			cctx, span := tracer.Start(ctx, "chat gpt-4o", opts...)
			_, _ = benchModel.Generate(cctx, benchReq)
			span.End()
		})
	})
	b.Run("SDKNeverSample", func(b *testing.B) {
		tp := sdkProvider(sdktrace.NeverSample())
		defer tp.Shutdown(context.Background())
		tracer := tp.Tracer(ScopeName)
		run(b, 20, tp, func(ctx context.Context) { bareSpan(b, tracer, ctx) })
	})
	b.Run("SDKAlwaysSample", func(b *testing.B) {
		tp := sdkProvider(sdktrace.AlwaysSample())
		defer tp.Shutdown(context.Background())
		tracer := tp.Tracer(ScopeName)
		run(b, 1, tp, func(ctx context.Context) { bareSpan(b, tracer, ctx) })
	})
}

// BenchmarkWrapAttempt measures the attempt layer alone (no request layer
// outside, so no call state to note) with the no-op provider.
func BenchmarkWrapAttempt(b *testing.B) {
	tr, err := New(Config{TracerProvider: noop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		b.Fatal(err)
	}
	m := tr.WrapAttempt(benchModel)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(ctx, benchReq); err != nil {
			b.Fatal(err)
		}
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}
