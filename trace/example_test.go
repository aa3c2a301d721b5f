package trace_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/trace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A request with one retry: a request span and one span per attempt, the
// retry visible as an event and as http.request.resend_count.
func ExampleTracer_Wrap() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tr, err := trace.New(trace.Config{TracerProvider: tp, Provider: "openai"})
	if err != nil {
		panic(err)
	}

	calls := 0
	adapter := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		calls++
		if calls == 1 {
			return nil, &portico.Error{Class: portico.Transient, Status: 503}
		}
		return &portico.Response{Text: "hi", FinishReason: portico.FinishStop, Model: "gpt-4o-2024-08-06",
			Usage: portico.Usage{InputTokens: 12, OutputTokens: 3}}, nil
	})
	// A two-attempt retry loop standing in for package retry.
	retry := func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			resp, err := next.Generate(ctx, req)
			if err == nil {
				return resp, nil
			}
			portico.Observe(ctx, portico.Event{Kind: portico.EventRetry, Attempt: 1, Class: portico.ClassOf(err)})
			return next.Generate(portico.ContextWithAttempt(ctx, portico.Attempt{Index: 1, ID: "r1"}), req)
		})
	}
	m := portico.Chain(adapter, tr.Wrap, retry, tr.WrapAttempt)
	if _, err := m.Generate(context.Background(), &portico.Request{Model: "gpt-4o"}); err != nil {
		panic(err)
	}
	for _, s := range rec.Ended() {
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.String()
		}
		fmt.Printf("%s attempt=%q resend=%q error=%q events=%d\n", s.Name(),
			a["portico.attempt.index"], a["http.request.resend_count"], a["error.type"], len(s.Events()))
	}
	// Output:
	// attempt gpt-4o attempt="0" resend="" error="transient" events=0
	// attempt gpt-4o attempt="1" resend="1" error="" events=0
	// chat gpt-4o attempt="" resend="" error="" events=1
}

// A tail sampler in front of the exporter keeps failed traces and drops, at
// ratio 0, the fast successful ones.
func ExampleTailSampler() {
	rec := tracetest.NewSpanRecorder()
	ts, err := trace.NewTailSampler(trace.TailConfig{Next: rec, Ratio: 0})
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ts))
	defer tp.Shutdown(context.Background())
	tr, err := trace.New(trace.Config{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	ok := tr.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{FinishReason: portico.FinishStop}, nil
	}))
	failing := tr.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, &portico.Error{Class: portico.Ambiguous}
	}))
	for range 3 {
		_, _ = ok.Generate(context.Background(), &portico.Request{Model: "m"})
	}
	_, _ = failing.Generate(context.Background(), &portico.Request{Model: "m"})
	fmt.Printf("%+v, exported %d\n", ts.Stats(), len(rec.Ended()))
	// Output:
	// {Kept:1 Dropped:3 Evicted:0}, exported 1
}

// Transport injects the attempt span's traceparent into the provider's HTTP
// request, so the server's trace joins the client's under that attempt.
func ExampleTracer_Transport() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tr, err := trace.New(trace.Config{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	var seen string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("traceparent")
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: tr.Transport(base)} // e.g. openai-go's option.WithHTTPClient(client)

	adapter := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
		res, err := client.Do(hreq)
		if err != nil {
			return nil, err
		}
		res.Body.Close()
		return &portico.Response{FinishReason: portico.FinishStop}, nil
	})
	if _, err := portico.Chain(adapter, tr.Wrap, tr.WrapAttempt).Generate(context.Background(), &portico.Request{Model: "m"}); err != nil {
		panic(err)
	}
	attempt := rec.Ended()[0] // the attempt span ends first
	fmt.Println(seen == "00-"+attempt.SpanContext().TraceID().String()+"-"+attempt.SpanContext().SpanID().String()+"-01")
	// Output:
	// true
}
