package trace

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// TestTraceparentAtFakeOpenAI sends a request whose attempts fail half the
// time (503, seeded) to the project's fake OpenAI server over in-memory HTTP,
// through a minimal chat-completions adapter whose client uses
// Tracer.Transport, and checks that every request the server recorded
// carries the traceparent of its own attempt span, in the request's trace.
func TestTraceparentAtFakeOpenAI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := fakeopenai.StartPipe(fakeopenai.Config{Seed: 3, Models: []fakeopenai.ModelConfig{{
			Name:   "gpt-4o",
			Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Fraction: 0.5, Status: 503}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		s := newSDK(t)
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, Provider: "openai"})
		client := &http.Client{Transport: tr.Transport(srv.Client().Transport)}
		adapter := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			body := []byte(`{"model":"` + req.Model + `","messages":[{"role":"user","content":"hello"}]}`)
			hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.BaseURL()+"chat/completions", bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			hreq.Header.Set("Content-Type", "application/json")
			res, err := client.Do(hreq)
			if err != nil {
				return nil, &portico.Error{Class: portico.Transient, Err: err}
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return nil, &portico.Error{Class: portico.Transient, Status: res.StatusCode}
			}
			return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
		})
		m := tr.Wrap(retryLoop(tr.WrapAttempt(adapter), "openai", 4, 0))
		for range 3 {
			_, _ = m.Generate(context.Background(), &portico.Request{Model: "gpt-4o"})
		}
		recs := srv.Requests()
		var attempts []string
		var retried bool
		for _, sp := range s.rec.Ended() {
			if !sp.Parent().IsValid() {
				continue // a request span
			}
			attempts = append(attempts, "00-"+sp.SpanContext().TraceID().String()+"-"+sp.SpanContext().SpanID().String()+"-01")
			retried = retried || attrs(sp.Attributes())["http.request.resend_count"] != ""
		}
		if len(recs) != len(attempts) || len(recs) < 4 || !retried {
			t.Fatalf("server saw %d requests, %d attempt spans, retried %v; want equal, >= 4, true (seed 3)",
				len(recs), len(attempts), retried)
		}
		for i, r := range recs {
			if r.Traceparent != attempts[i] {
				t.Errorf("server request %d traceparent = %q, want %q (its attempt span)", i, r.Traceparent, attempts[i])
			}
		}
	})
}
