package stack

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/trace"
)

// attemptsOf returns the portico.attempts attribute of the last ended
// request span (the one with no parent), -1 when it has none.
func attemptsOf(t *testing.T, rec *tracetest.SpanRecorder) int64 {
	t.Helper()
	spans := rec.Ended()
	for i := len(spans) - 1; i >= 0; i-- {
		if spans[i].Parent().IsValid() {
			continue
		}
		for _, a := range spans[i].Attributes() {
			if a.Key == trace.KeyAttempts {
				return a.Value.AsInt64()
			}
		}
		return -1
	}
	t.Fatal("no request span")
	return -1
}

// portico.attempts counts the attempts made: 0 for a request refused before
// any (a malformed request, one above the size cap, a client over its limit,
// an open breaker), 1 for one answered at once.
func TestAttemptsZeroWhenRefused(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tr, err := trace.New(trace.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	f := modeltest.NewFake(modeltest.Answer("ok"), modeltest.Fail(modeltest.StatusError(401)))
	r := route("r", f)
	r.Breaker = breaker.Config{OpenFor: time.Hour}
	s, err := New(Config{Routes: []Route{r}, Tracer: tr, MaxRequestBytes: 100,
		Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 3, Period: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	big := hello.Clone()
	big.Messages = []portico.Message{portico.Text(portico.RoleUser, string(make([]byte, 200)))}
	for _, c := range []struct {
		name string
		req  *portico.Request
		want int64
	}{
		{"no messages", &portico.Request{MaxOutputTokens: 16}, 0},
		{"above the size cap", big, 0},
		{"answered", hello, 1},
		{"401: the breaker opens", hello, 1},
		{"breaker open", hello, 0},
		{"client over its limit", hello, 0},
	} {
		s.Generate(context.Background(), c.req)
		if got := attemptsOf(t, rec); got != c.want {
			t.Errorf("%s: portico.attempts = %d, want %d", c.name, got, c.want)
		}
	}
}
