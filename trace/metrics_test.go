package trace

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// point is one data point of any kind, reduced to what the test compares.
type point struct {
	attrs      map[string]string
	count      uint64  // histograms
	sum, value float64 // histogram sum; counter value
}

func points(t *testing.T, rm metricdata.ResourceMetrics, name string) []point {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			var ps []point
			set := func(s attribute.Set) map[string]string { return attrs(s.ToSlice()) }
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrs: set(p.Attributes), value: float64(p.Value)})
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrs: set(p.Attributes), count: p.Count, sum: float64(p.Sum)})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrs: set(p.Attributes), count: p.Count, sum: p.Sum})
				}
			default:
				t.Fatalf("metric %s has unexpected data %T", name, m.Data)
			}
			return ps
		}
	}
	return nil
}

// onePoint checks that name has exactly one point with these attributes and
// returns it.
func onePoint(t *testing.T, rm metricdata.ResourceMetrics, name string, want map[string]string) point {
	t.Helper()
	ps := points(t, rm, name)
	var found []point
	for _, p := range ps {
		match := len(p.attrs) == len(want)
		for k, v := range want {
			match = match && p.attrs[k] == v
		}
		if match {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("metric %s: %d points with attributes %v, want 1; all points: %+v", name, len(found), want, ps)
	}
	return found[0]
}

// eventsThen reports the given events and returns err.
func eventsThen(err error, events ...portico.Event) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		for _, e := range events {
			portico.Observe(ctx, e)
		}
		return nil, err
	})
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, Provider: "openai",
			ServerAddress: "api.openai.com", ServerPort: 443})
		ctx := context.Background()
		// 1: the scenario (streamed; 50 ms limiter wait, 2 retries, a fallback; 0.68 s).
		if _, err := scenario(tr).Generate(ctx, scenarioRequest(true)); err != nil {
			t.Fatal(err)
		}
		// 2: a deadline failure after the events no span test covers.
		deadline := eventsThen(&portico.Error{Class: portico.Deadline},
			portico.Event{Kind: portico.EventBreakerState, Route: "a", Reason: "open"},
			portico.Event{Kind: portico.EventRateLimitReject, Reason: "in_flight", Delay: time.Second},
			portico.Event{Kind: portico.EventBudgetExhausted, Route: "a", Class: portico.Transient},
			portico.Event{Kind: portico.EventValidation, Route: "a", Reason: "rejected", Class: portico.InvalidResponse},
			portico.Event{Kind: portico.EventSharedStore, Route: "a", Reason: "ratelimit:fail_open", Class: portico.Transient})
		if _, err := tr.Wrap(deadline).Generate(ctx, &portico.Request{Model: "gpt-4o"}); err == nil {
			t.Fatal("deadline model succeeded")
		}
		// 3: an ambiguous failure.
		if _, err := tr.Wrap(eventsThen(&portico.Error{Class: portico.Ambiguous})).Generate(ctx, &portico.Request{Model: "gpt-4o"}); err == nil {
			t.Fatal("ambiguous model succeeded")
		}

		var rm metricdata.ResourceMetrics
		if err := s.reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		genai := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
			"server.address": "api.openai.com", "server.port": "443"}
		with := func(m map[string]string, kv ...string) map[string]string {
			c := map[string]string{}
			for k, v := range m {
				c[k] = v
			}
			for i := 0; i < len(kv); i += 2 {
				c[kv[i]] = kv[i+1]
			}
			return c
		}
		failed := func(class string) map[string]string {
			return map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
				"gen_ai.request.model": "gpt-4o", "error.type": class,
				"server.address": "api.openai.com", "server.port": "443"}
		}
		type check struct {
			name  string
			attrs map[string]string
			count uint64
			sum   float64 // histogram sum or counter value
		}
		hist := func(name string, a map[string]string, count uint64, sum float64) check {
			return check{name, a, count, sum}
		}
		ctr := func(name string, a map[string]string, v float64) check { return check{name, a, 0, v} }
		sec := func(d time.Duration) float64 { return d.Seconds() }
		for _, c := range []check{
			hist(MetricOperationDuration, genai, 1, sec(680*time.Millisecond)),
			hist(MetricOperationDuration, failed("deadline"), 1, 0),
			hist(MetricOperationDuration, failed("ambiguous"), 1, 0),
			hist(MetricTimeToFirstChunk, genai, 1, sec(680*time.Millisecond)),
			hist(MetricTokenUsage, with(genai, "gen_ai.token.type", "input"), 1, 100),
			hist(MetricTokenUsage, with(genai, "gen_ai.token.type", "output"), 1, 20),
			ctr(MetricRequests, map[string]string{"portico.route": "b", "portico.outcome": "accepted", "error.type": "ok"}, 1),
			ctr(MetricRequests, map[string]string{"portico.route": "", "portico.outcome": "deadline", "error.type": "deadline"}, 1),
			ctr(MetricRequests, map[string]string{"portico.route": "", "portico.outcome": "ambiguous", "error.type": "ambiguous"}, 1),
			ctr(MetricFallbacks, map[string]string{"portico.fallback.source": "a", "portico.fallback.reason": "transient"}, 1),
			hist(MetricAttempts, map[string]string{"portico.outcome": "accepted"}, 1, 4),
			hist(MetricAttempts, map[string]string{"portico.outcome": "deadline"}, 1, 1),
			ctr(MetricDeadlineExhausted, map[string]string{}, 1),
			ctr(MetricAmbiguous, map[string]string{}, 1),
			ctr(MetricValidationRejects, map[string]string{}, 1),
			hist(MetricCost, map[string]string{"portico.route": "b", "portico.outcome": "accepted"}, 1, 0.0012),
			hist(MetricRouteDuration, map[string]string{"portico.route": "b", "portico.outcome": "accepted"}, 1, sec(680*time.Millisecond)),
			ctr(MetricRetries, map[string]string{"portico.retry.reason": "transient"}, 2),
			ctr(MetricBudgetExhausted, map[string]string{}, 1),
			ctr(MetricBreakerChanges, map[string]string{"portico.route": "a", "portico.breaker.state": "open"}, 1),
			hist(MetricRateLimitWait, map[string]string{}, 1, sec(50*time.Millisecond)),
			ctr(MetricRateLimitRejects, map[string]string{"portico.ratelimit.reason": "in_flight"}, 1),
			ctr(MetricSharedStore, map[string]string{"portico.shared_store": "ratelimit:fail_open"}, 1),
		} {
			p := onePoint(t, rm, c.name, c.attrs)
			got := p.value
			if c.count > 0 {
				got = p.sum
				if p.count != c.count {
					t.Errorf("%s%v count = %d, want %d", c.name, c.attrs, p.count, c.count)
				}
			}
			if got != c.sum {
				t.Errorf("%s%v = %v, want %v", c.name, c.attrs, got, c.sum)
			}
		}
		if n := len(points(t, rm, MetricTimeToFirstChunk)); n != 1 {
			t.Errorf("%s has %d points, want 1 (streamed calls only)", MetricTimeToFirstChunk, n)
		}
	})
}

// TestMetricsWithoutTracing checks that metrics need no recording span: with
// the no-op tracer provider the scenario still counts 4 attempts, the TTFT
// and the fallback.
func TestMetricsWithoutTracing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		tr := mustNew(t, Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: s.mp})
		if _, err := scenario(tr).Generate(context.Background(), scenarioRequest(true)); err != nil {
			t.Fatal(err)
		}
		var rm metricdata.ResourceMetrics
		if err := s.reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		if p := onePoint(t, rm, MetricAttempts, map[string]string{"portico.outcome": "accepted"}); p.sum != 4 {
			t.Errorf("attempts = %v, want 4", p.sum)
		}
		genai := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
			"gen_ai.response.model": "gpt-4o-mini-2024-07-18"}
		if p := onePoint(t, rm, MetricTimeToFirstChunk, genai); p.sum != (680 * time.Millisecond).Seconds() {
			t.Errorf("TTFT = %v, want 0.68", p.sum)
		}
		if p := onePoint(t, rm, MetricFallbacks, map[string]string{"portico.fallback.source": "a", "portico.fallback.reason": "transient"}); p.value != 1 {
			t.Errorf("fallbacks = %v, want 1", p.value)
		}
	})
}

// TestInertTracer: a Tracer over no-op providers and no logger adds no
// layer (the model sees the caller's own context), as if there were no
// Tracer: a Tracer with a meter provider above it counts the attempts of
// the attempt layers that record, not the inert one's.
func TestInertTracer(t *testing.T) {
	inert := mustNew(t, Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, 1)
	var seen context.Context
	m := portico.ModelFunc(func(c context.Context, _ *portico.Request) (*portico.Response, error) {
		seen = c
		return &portico.Response{Text: "ok"}, nil
	})
	for name, w := range map[string]portico.Middleware{"Wrap": inert.Wrap, "WrapAttempt": inert.WrapAttempt,
		"ForRoute's WrapAttempt": inert.ForRoute(Route{Name: "a"}).WrapAttempt} {
		seen = nil
		if _, err := w(m).Generate(ctx, benchReq); err != nil || seen != ctx {
			t.Errorf("inert %s: err %v, model saw %v; want the caller's context", name, err, seen)
		}
	}
	logged := mustNew(t, Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if logged.Wrap(m).Generate(ctx, benchReq); seen == ctx {
		t.Error("a Tracer with a logger added no request layer")
	}

	s := newSDK(t)
	outer := mustNew(t, Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: s.mp})
	fail := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: portico.Transient}
	})
	g := fallback.MustNew(fallback.Config{Routes: []portico.Route{
		{Name: "a", Model: outer.ForRoute(Route{Name: "a"}).WrapAttempt(fail)},
		{Name: "b", Model: inert.ForRoute(Route{Name: "b"}).WrapAttempt(m)},
	}})
	if _, err := outer.Wrap(inert.Wrap(g)).Generate(context.Background(), benchReq); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if p := onePoint(t, rm, MetricAttempts, map[string]string{"portico.outcome": "accepted"}); p.sum != 1 {
		t.Errorf("attempts the outer Tracer counted = %v, want 1 (its own route's)", p.sum)
	}
}
