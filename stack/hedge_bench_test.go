package stack

import (
	"context"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/trace"
)

// The preset's group hedging (Config.Hedge) when the primary answers
// before the delay, next to the same request unhedged (NoAmbiguousRetry):
//
//	go test -run '^$' -bench Hedge -benchtime=200ms -count=5 ./stack/
func BenchmarkGroupHedge(b *testing.B) {
	s := presetWith(b, 0, &hedge.Config{Delay: time.Second})
	req := hello.Clone()
	req.Identity.ClientKey = "alice"
	once := req.Clone()
	once.NoAmbiguousRetry = true
	for _, c := range []struct {
		name string
		req  *portico.Request
	}{{"unhedged", once}, {"no hedge sent", req}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Generate(ctx, c.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// presetWith is the stack the benchmark measures: two routes answering at
// once (breaker, retry, validate each), client limits far from binding, a
// no-op tracer, the given Deadline, and the group's hedging configured by
// hc (nil: none). The allocation pins are bench's TestAllocs, over the
// adapters.
func presetWith(t testing.TB, deadline time.Duration, hc *hedge.Config) *Stack {
	t.Helper()
	ok := &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 5, OutputTokens: 5}}
	m := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return ok, nil })
	tr, err := trace.New(trace.Config{TracerProvider: noop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Routes: []Route{route("a", m), route("b", m)}, Deadline: deadline, Tracer: tr, Hedge: hc,
		Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1e9, Tokens: 1e12, Period: time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
