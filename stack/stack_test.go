package stack

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/trace"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var hello = &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}, MaxOutputTokens: 16}

func route(name string, m portico.Model) Route {
	return Route{Route: portico.Route{Name: name, Model: m}}
}

// adaptiveLimit is adaptive.New(c), for a route limiter's Concurrency.
func adaptiveLimit(t testing.TB, c adaptive.Config) *adaptive.Limit {
	t.Helper()
	l, err := adaptive.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestSingleRoute(t *testing.T) {
	f := modeltest.NewFake(modeltest.Answer("hi there"))
	s, err := New(Config{Routes: []Route{route("only", f)}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Generate(context.Background(), hello)
	if err != nil || resp.Text != "hi there" || resp.Route != "only" || f.Count() != 1 {
		t.Fatalf("Generate = %+v, %v (calls %d); want hi there from only, 1 call", resp, err, f.Count())
	}
	if s.Breaker("only") == nil || s.Breaker("only").State() != breaker.Closed || s.Breaker("nope") != nil {
		t.Errorf("Breaker(only) = %v, Breaker(nope) = %v; want a closed breaker and nil", s.Breaker("only"), s.Breaker("nope"))
	}
}

// A failing primary is retried by its own retry layer (3 attempts), then the
// group falls back; once the primary's breaker opens, later requests skip it
// without calling it.
func TestRetryThenFallbackThenBreakerSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		b := modeltest.NewFake(modeltest.Answer("from b"))
		ra, rb := route("a", a), route("b", b)
		ra.Breaker = breaker.Config{Trip: breaker.ConsecutiveFailures(2), OpenFor: time.Minute}
		ra.Retry = retry.Config{Backoff: retry.Backoff{BaseDelay: 10 * time.Millisecond, MaxDelay: 10 * time.Millisecond}}
		s, err := New(Config{Routes: []Route{ra, rb}})
		if err != nil {
			t.Fatal(err)
		}
		for i, wantA := range []int{3, 6, 6} {
			resp, err := s.Generate(context.Background(), hello)
			if err != nil || resp.Route != "b" || len(resp.Hops) != 1 || resp.Hops[0].Route != "a" {
				t.Fatalf("request %d: Generate = %+v, %v; want b after one hop from a", i, resp, err)
			}
			if a.Count() != wantA {
				t.Errorf("request %d: primary calls = %d, want %d", i, a.Count(), wantA)
			}
		}
		if st := s.Breaker("a").State(); st != breaker.Open {
			t.Errorf("primary breaker = %v, want open", st)
		}
		if b.Count() != 3 {
			t.Errorf("fallback calls = %d, want 3", b.Count())
		}
	})
}

// The end-to-end deadline bounds a stalled route: the call ends at the deadline
// with a Deadline error, in virtual time.
func TestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake(modeltest.Outcome{Stall: true})
		r := route("slow", f)
		r.Skip |= SkipRetry
		s, err := New(Config{Routes: []Route{r}, Deadline: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = s.Generate(context.Background(), hello)
		if portico.ClassOf(err) != portico.Deadline || time.Since(start) != 2*time.Second {
			t.Errorf("Generate = %v after %v; want a deadline error after 2s", err, time.Since(start))
		}
		// A contract's shorter deadline wins.
		req := hello.Clone()
		req.Contract = &portico.Contract{Deadline: 500 * time.Millisecond}
		start = time.Now()
		_, err = s.Generate(context.Background(), req)
		if portico.ClassOf(err) != portico.Deadline || time.Since(start) != 500*time.Millisecond {
			t.Errorf("Generate = %v after %v; want a deadline error after 500ms", err, time.Since(start))
		}
	})
}

// Per-client limits isolate clients: one client's exhausted bucket does not
// refuse another.
func TestClientLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake(modeltest.Answer("ok"))
		s, err := New(Config{Routes: []Route{route("r", f)}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 2, Period: time.Minute}}})
		if err != nil {
			t.Fatal(err)
		}
		call := func(client string) error {
			req := hello.Clone()
			req.Identity.ClientKey = client
			_, err := s.Generate(context.Background(), req)
			return err
		}
		for i := range 2 {
			if err := call("greedy"); err != nil {
				t.Fatalf("greedy call %d = %v, want admitted", i, err)
			}
		}
		err = call("greedy")
		// 2 per minute: the next token is 30 s away.
		if portico.ClassOf(err) != portico.RateLimited || portico.RetryAfterOf(err) != 30*time.Second {
			t.Errorf("third greedy call = %v (retry after %v), want rate limited for 30s", err, portico.RetryAfterOf(err))
		}
		if err := call("polite"); err != nil {
			t.Errorf("polite call = %v, want admitted", err)
		}
		if f.Count() != 3 {
			t.Errorf("model calls = %d, want 3", f.Count())
		}
	})
}

// With a Tracer, a request that succeeds on its second attempt gives one
// request span with two attempt spans as children.
func TestTracer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer tp.Shutdown(context.Background())
		tr, err := trace.New(trace.Config{TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		f := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)), modeltest.Answer("ok"))
		r := route("r", f)
		r.Retry = retry.Config{Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}}
		s, err := New(Config{Routes: []Route{r}, Tracer: tr})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Generate(context.Background(), hello); err != nil {
			t.Fatal(err)
		}
		spans := rec.Ended()
		if len(spans) != 3 {
			t.Fatalf("spans = %d, want 3 (request + 2 attempts)", len(spans))
		}
		root := spans[len(spans)-1]
		for _, sp := range spans[:2] {
			if sp.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Errorf("attempt span %q parent = %v, want the request span %v", sp.Name(), sp.Parent().SpanID(), root.SpanContext().SpanID())
			}
		}
	})
}

// Zero Deadline means DefaultDeadline: a stalled provider cannot hold a call
// forever. Negative means none.
func TestDefaultDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake(modeltest.Outcome{Stall: true})
		r := route("slow", f)
		r.Skip |= SkipRetry
		s, err := New(Config{Routes: []Route{r}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = s.Generate(context.Background(), hello)
		if portico.ClassOf(err) != portico.Deadline || time.Since(start) != DefaultDeadline {
			t.Errorf("Generate = %v after %v; want a deadline error after %v", err, time.Since(start), DefaultDeadline)
		}
		s, err = New(Config{Routes: []Route{r}, Deadline: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start = time.Now()
		_, err = s.Generate(ctx, hello)
		if portico.ClassOf(err) != portico.Deadline || time.Since(start) != 5*time.Minute {
			t.Errorf("Generate (no stack deadline) = %v after %v; want the context's 5m", err, time.Since(start))
		}
	})
}

// A small token limit does not make the default N_max an error.
func TestSmallTokenLimit(t *testing.T) {
	f := modeltest.NewFake(modeltest.Answer("ok"))
	s, err := New(Config{Routes: []Route{route("r", f)}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Tokens: 500}}})
	if err != nil {
		t.Fatalf("New with Tokens 500 = %v, want no error", err)
	}
	req := hello.Clone()
	req.MaxOutputTokens = 0 // priced at the default N_max, 250
	if _, err := s.Generate(context.Background(), req); err != nil {
		t.Errorf("Generate = %v, want admitted", err)
	}
	if _, err := s.Generate(context.Background(), nil); err != portico.ErrNilRequest {
		t.Errorf("Generate(nil) = %v, want portico.ErrNilRequest", err)
	}
}

func TestConfigErrors(t *testing.T) {
	f := modeltest.NewFake()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no routes", Config{}},
		{"no model", Config{Routes: []Route{{Route: portico.Route{Name: "x"}}}}},
		{"no name", Config{Routes: []Route{{Route: portico.Route{Model: f}}}}},
		{"duplicate", Config{Routes: []Route{route("x", f), route("x", f)}}},
		{"bad retry", Config{Routes: []Route{{Route: portico.Route{Name: "x", Model: f}, Retry: retry.Config{MaxAttempts: -1}}}}},
		{"bad limits", Config{Routes: []Route{route("x", f)}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: -1}}}},
	}
	for _, tt := range tests {
		if s, err := New(tt.cfg); err == nil || s != nil {
			t.Errorf("%s: New = %v, %v; want an error", tt.name, s, err)
		}
	}
}

// The stack keeps the Model contract (modeltest's conformance suite): no
// mutation, cancellation honoured, streaming adds up, safe for concurrent use.
func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
		caps := portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage, Tools: true, Schema: portico.SchemaStrict, ModelClass: "small"}
		a, b := route("a", base), route("b", base)
		a.Capabilities, b.Capabilities = caps, caps
		s, err := New(Config{Routes: []Route{a, b}, Deadline: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The stack's retry layer keeps a budget per destination by default: an
// outage seen by 2,000 tenants at once makes at most 10% retries plus the
// destination's burst of 100, not the 3 attempts each that per-tenant
// budgets alone would allow. The breaker is left out so that every request
// reaches the route.
func TestOutageRetriesBoundedPerDestination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
		r := route("down", down)
		r.Skip |= SkipBreaker
		s, err := New(Config{Routes: []Route{r}})
		if err != nil {
			t.Fatal(err)
		}
		const n = 2000
		for i := range n {
			req := hello.Clone()
			req.Identity.ClientKey = "tenant-" + strconv.Itoa(i)
			if _, err := s.Generate(context.Background(), req); !errors.Is(err, portico.ErrTransient) {
				t.Fatalf("request %d: err = %v, want transient", i, err)
			}
		}
		// 100 tokens, then 1,999 deposits of 0.1 (the first is lost to the
		// full bucket): 299 retries.
		if got, want := down.Count(), n+299; got != want {
			t.Errorf("attempts = %d over %d requests from %d tenants, want %d (bound %d)", got, n, n, want, n*11/10+100)
		}
	})
}
