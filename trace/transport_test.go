package trace

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/portico-llm/portico"
)

// TestTransportPropagates sends each attempt of a request that is retried
// once to a test server over HTTP and checks that the server reads a
// traceparent naming the request's trace and that attempt's own span.
func TestTransportPropagates(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		n := len(got)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()

	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	client := &http.Client{Transport: tr.Transport(base)}
	adapter := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
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
	hreq, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	res, err := client.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got[2] != "" {
		t.Errorf("traceparent without a span = %q, want none", got[2])
	}
}
