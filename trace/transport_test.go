package trace

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// TestTransportPropagates sends each attempt of a request that is retried
// once (the fake server's script answers 503, then 200) over HTTP and checks
// that the server read a traceparent naming the request's trace and that
// attempt's own span.
func TestTransportPropagates(t *testing.T) {
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", Script: []fakeopenai.Fault{
		{Kind: fakeopenai.FaultStatus, Status: 503},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	post := func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.BaseURL()+"chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err == nil {
			r.Header.Set("Content-Type", "application/json")
		}
		return r, err
	}
	base := &http.Transport{}
	defer base.CloseIdleConnections()

	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	client := &http.Client{Transport: tr.Transport(base)}
	adapter := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		hreq, err := post(ctx)
		if err != nil {
			return nil, err
		}
		res, err := client.Do(hreq)
		if err != nil {
			return nil, &portico.Error{Class: portico.Transient, Err: err}
		}
		res.Body.Close()
		if hreq.Header.Get("traceparent") != "" {
			t.Errorf("Transport modified the caller's http.Request")
		}
		if res.StatusCode != http.StatusOK {
			return nil, &portico.Error{Class: portico.Transient, Status: res.StatusCode}
		}
		return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
	})
	m := tr.Wrap(retryLoop(tr.WrapAttempt(adapter), "r", 3, 0))
	if _, err := m.Generate(context.Background(), &portico.Request{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	spans := s.rec.Ended()
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, r.Traceparent)
	}
	if len(spans) != 3 || len(got) != 2 {
		t.Fatalf("%d spans and %d server calls, want 3 and 2", len(spans), len(got))
	}
	root := spans[2]
	for i := range 2 {
		sc := spans[i].SpanContext()
		want := "00-" + root.SpanContext().TraceID().String() + "-" + sc.SpanID().String() + "-01"
		if got[i] != want {
			t.Errorf("attempt %d: server read traceparent %q, want %q (the attempt span)", i, got[i], want)
		}
		if sc.SpanID() == root.SpanContext().SpanID() {
			t.Errorf("attempt %d has the root's span id", i)
		}
	}

	// Without a span in the context nothing is injected.
	hreq, _ := post(context.Background())
	res, err := client.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if rs := srv.Requests(); len(rs) != 3 || rs[2].Traceparent != "" {
		t.Errorf("traceparent without a span = %+v, want none", rs)
	}
}
