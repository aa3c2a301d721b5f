package trace

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const globalChildEnv = "PORTICO_TRACE_GLOBAL_CHILD"

// TestGlobalProvider checks the zero Config before and after an SDK is
// installed with otel.SetTracerProvider. otel's global provider can be set
// only once per process, so the test runs itself in a child process.
func TestGlobalProvider(t *testing.T) {
	if os.Getenv(globalChildEnv) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGlobalProvider$", "-test.v")
		cmd.Env = append(os.Environ(), globalChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	tr := mustNew(t, Config{}) // global providers, nothing installed yet
	if tr.global == nil {
		t.Fatalf("New(Config{}): global placeholder not detected (provider %T)", otel.GetTracerProvider())
	}
	var seen trace.SpanContext
	m := tr.Wrap(tr.WrapAttempt(portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		seen = trace.SpanContextFromContext(ctx)
		return benchResp, nil
	})))
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2},
		TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)

	// No SDK: the first call probes Start, later ones skip it. The model sees
	// the caller's span context either way, as the placeholder would give it.
	for i := range 2 {
		if _, err := m.Generate(ctx, benchReq); err != nil {
			t.Fatal(err)
		}
		if !seen.Equal(parent) {
			t.Errorf("call %d: model saw span context %v, want the caller's %v", i, seen, parent)
		}
	}
	if !tr.globalIdle.Load() {
		t.Fatalf("globalIdle = false after calls with no SDK installed, want true")
	}
	if got := testing.AllocsPerRun(100, func() { _, _ = m.Generate(ctx, benchReq) }); got != 0 {
		t.Errorf("allocs per call with the global provider unset = %v, want 0", got)
	}

	// An SDK installed later is used from the next call on: a request span
	// under the caller's span and an attempt span under it.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	otel.SetTracerProvider(tp)
	if _, err := m.Generate(ctx, benchReq); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("after SetTracerProvider: %d spans, want 2 (attempt, request)", len(spans))
	}
	attempt, root := spans[0], spans[1]
	if root.Name() != "chat gpt-4o" || root.Parent().SpanID() != parent.SpanID() || root.SpanContext().TraceID() != parent.TraceID() {
		t.Errorf("request span %q parent %v trace %v, want \"chat gpt-4o\" under %v in trace %v",
			root.Name(), root.Parent().SpanID(), root.SpanContext().TraceID(), parent.SpanID(), parent.TraceID())
	}
	if attempt.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Errorf("attempt parent = %v, want the request span %v", attempt.Parent().SpanID(), root.SpanContext().SpanID())
	}
	if !seen.Equal(attempt.SpanContext()) {
		t.Errorf("model saw span context %v, want the attempt's %v", seen, attempt.SpanContext())
	}
	if tr.globalIdle.Load() {
		t.Errorf("globalIdle = true after SetTracerProvider, want false")
	}
}
