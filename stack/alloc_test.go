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

// preset is the stack the allocation pins and benchmarks measure: two
// routes answering at once (breaker, retry, validate each), client limits
// far from binding, a no-op tracer, and the given Deadline.
func preset(t testing.TB, deadline time.Duration) *Stack {
	t.Helper()
	return presetWith(t, deadline, nil)
}

// presetWith is preset with the group's hedging configured by hc (nil:
// none).
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

// TestAllocs pins the preset's allocations per request on the happy path.
// The stack's own deadline is a standard context (context.WithDeadline: the
// context, its timer), made only when it ends before the caller's, and so
// is the primary's share of the deadline (fallback.Config.Share: the
// context that carries its values, and one with a deadline registered with
// its parent's): 12 under the stack's deadline, 5 under the caller's
// alone. Without any deadline the primary's context carries its cooldown
// (one allocation).
func TestAllocs(t *testing.T) {
	req := hello.Clone()
	req.Identity.ClientKey = "alice"
	short, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	long, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	contract := req.Clone()
	contract.Contract = &portico.Contract{Deadline: 10 * time.Second}
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		ctx      context.Context
		req      *portico.Request
		want     float64
		hedged   float64 // with the group's hedging, no hedge sent
	}{
		{"default deadline", 0, context.Background(), req, 12, 28},
		{"caller's deadline earlier", 0, short, req, 5, 21},
		{"caller's deadline later", 0, long, req, 12, 28},
		{"caller's deadline only", -1, short, req, 5, 21},
		{"Contract.Deadline", -1, context.Background(), contract, 12, 28},
		{"Contract.Deadline and the stack's", 0, context.Background(), contract, 12, 28},
		{"no deadline", -1, context.Background(), req, 1, 14},
	} {
		s := preset(t, tc.deadline)
		if _, err := s.Generate(tc.ctx, tc.req); err != nil {
			t.Fatal(err)
		}
		if got := testing.AllocsPerRun(1000, func() { s.Generate(tc.ctx, tc.req) }); got != tc.want {
			t.Errorf("%s: allocs per request = %v, want %v", tc.name, got, tc.want)
		}
		// The group's hedging, with no hedge sent, adds the race (see
		// fallback's TestHedgeRacedAllocs): its state, the primary's
		// cancelable context and its hedge's timer, and under a deadline
		// the primary's share.
		s = presetWith(t, tc.deadline, &hedge.Config{Delay: time.Second})
		if _, err := s.Generate(tc.ctx, tc.req); err != nil {
			t.Fatal(err)
		}
		if got := testing.AllocsPerRun(1000, func() { s.Generate(tc.ctx, tc.req) }); got != tc.hedged {
			t.Errorf("%s, hedged: allocs per request = %v, want %v", tc.name, got, tc.hedged)
		}
	}
	// A streamed request pays for watching its chunks: each layer's
	// StreamWatch, and the retry layer's watchdog, whose cancelable context
	// materializes the deadlines above it (their timer); with a route to
	// fall back on, the group's bound on the gaps between signs of progress
	// (fallback.Config.Share) adds a timer and a cancelable context.
	streamed := req.Clone()
	streamed.OnChunk = func(portico.Chunk) error { return nil }
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		want     float64
	}{{"streamed, default deadline", 0, 32}, {"streamed, no deadline", -1, 9}} {
		s := preset(t, tc.deadline)
		if _, err := s.Generate(context.Background(), streamed); err != nil {
			t.Fatal(err)
		}
		if got := testing.AllocsPerRun(1000, func() { s.Generate(context.Background(), streamed) }); got != tc.want {
			t.Errorf("%s: allocs per request = %v, want %v", tc.name, got, tc.want)
		}
	}
}
