package stack

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/trace"
)

// log records what the user's middlewares saw, in order.
type log struct {
	mu    sync.Mutex
	lines []string
}

func (l *log) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

// mw is a middleware that logs name, whether ctx has a deadline and whether
// a request span records, then calls next, or fails with fail instead when
// fail is set.
func (l *log) mw(name string, fail error) portico.Middleware {
	return func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			_, dl := ctx.Deadline()
			entry := name
			if dl {
				entry += " deadline"
			}
			if oteltrace.SpanFromContext(ctx).IsRecording() {
				entry += " traced"
			}
			l.add(entry)
			if fail != nil {
				return nil, fail
			}
			return next.Generate(ctx, req)
		})
	}
}

// TestMiddlewarePositions: Config.Middleware runs inside the request span
// and outside the deadline; a route's Middleware runs outside its breaker
// (its failure moves the group on but never trips the breaker); a route's
// ModelMiddleware runs around the Model alone, inside retry, once per
// attempt.
func TestMiddlewarePositions(t *testing.T) {
	var l log
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tr, err := trace.New(trace.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	primary := route("primary", modeltest.NewFake(modeltest.Answer("unused")))
	primary.Breaker = breaker.Config{Trip: breaker.ConsecutiveFailures(1), OpenFor: time.Minute}
	primary.Middleware = []portico.Middleware{l.mw("primary route", &portico.Error{Class: portico.Transient, Reason: "cache down"})}
	fb := route("fallback", modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)), modeltest.Answer("hi")))
	fb.Retry = retry.Config{MaxAttempts: 2, Backoff: retry.Backoff{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}}
	fb.Middleware = []portico.Middleware{l.mw("fallback route", nil)}
	fb.ModelMiddleware = []portico.Middleware{l.mw("fallback model", nil)}
	s, err := New(Config{Routes: []Route{primary, fb}, Middleware: []portico.Middleware{l.mw("stack", nil)}, Tracer: tr})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Generate(context.Background(), hello)
	if err != nil || resp.Route != "fallback" || resp.Text != "hi" {
		t.Fatalf("Generate = %+v, %v; want the fallback's second attempt", resp, err)
	}
	want := []string{"stack traced", "primary route deadline traced", "fallback route deadline traced", "fallback model deadline traced", "fallback model deadline traced"}
	if !slices.Equal(l.lines, want) {
		t.Errorf("middlewares saw %q, want %q", l.lines, want)
	}
	if st := s.Breaker("primary").State(); st != breaker.Closed {
		t.Errorf("primary breaker = %v after its route middleware failed, want closed", st)
	}
}

// TestAccess: the stack gives the limiters, breakers and retriers it built,
// and nil for a layer left out or a route it does not have; the limiters
// are the live ones.
func TestAccess(t *testing.T) {
	f := modeltest.NewFake(modeltest.Answer("ok"))
	a := route("a", f)
	a.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 10, Period: time.Second}}
	b := route("b", f)
	b.Skip = SkipBreaker | SkipRetry
	s, err := New(Config{Routes: []Route{a, b}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.ClientLimiter() == nil || s.Limiter("a") == nil || s.Breaker("a") == nil || s.Retrier("a") == nil {
		t.Fatalf("ClientLimiter %v, Limiter(a) %v, Breaker(a) %v, Retrier(a) %v; want all built", s.ClientLimiter(), s.Limiter("a"), s.Breaker("a"), s.Retrier("a"))
	}
	if s.Limiter("b") != nil || s.Breaker("b") != nil || s.Retrier("b") != nil || s.Limiter("nope") != nil || s.Retrier("nope") != nil {
		t.Errorf("b's or an unknown route's layers are not nil")
	}
	req := hello.Clone()
	req.Identity.ClientKey = "c"
	if _, err := s.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Generate(context.Background(), req); portico.ClassOf(err) != portico.RateLimited || portico.RetryAfterOf(err) < 59*time.Minute {
		t.Fatalf("second request = %v, want RateLimited for about an hour by the client limit of 1 per hour", err)
	}
	if n := s.ClientLimiter().Keys(); n != 1 {
		t.Errorf("ClientLimiter().Keys() = %d, want 1", n)
	}
	if err := s.ClientLimiter().SetLimit(ratelimit.Limits{Requests: 100, Period: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Generate(context.Background(), req); portico.ClassOf(err) != portico.RateLimited || portico.RetryAfterOf(err) > 10*time.Millisecond {
		t.Errorf("after SetLimit(100/s): Generate = %v, want RateLimited for at most 10ms (the new rate)", err)
	}
	if n := s.Limiter("a").Keys(); n != 1 {
		t.Errorf("Limiter(a).Keys() = %d, want 1 (one model)", n)
	}
}
