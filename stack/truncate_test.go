package stack

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
)

// TestRequestMaxTokensTruncationKeepsBreakersClosed: healthy routes that
// honour the request's MaxOutputTokens, as every provider does, and one
// tenant that asks for structured output with far too small a
// MaxOutputTokens. Every answer stops with finish reason length, validate
// rejects it (LengthRejectStructured, the default) as InvalidResponse, a
// route fault, and each route's breaker counts it: after five such requests
// every breaker is open and every other tenant is refused (Rejected, "no
// route can serve the request") for OpenFor. The truncation is what the
// request asked for, on any route; it is not the route's fault.
func TestRequestMaxTokensTruncationKeepsBreakersClosed(t *testing.T) {
	honest := func(name string) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			const answer = `{"severity":"low","summary":"printer on fire"}`
			if req.MaxOutputTokens > 0 && req.MaxOutputTokens < 10 {
				return &portico.Response{Text: answer[:req.MaxOutputTokens*4], FinishReason: portico.FinishLength, Model: name}, nil
			}
			return &portico.Response{Text: answer, FinishReason: portico.FinishStop, Model: name}, nil
		})
	}
	schema := &portico.Schema{Name: "ticket", JSON: json.RawMessage(`{"type":"object","required":["severity","summary"]}`)}
	rs := []Route{route("a", honest("a")), route("b", honest("b"))}
	for i := range rs {
		rs[i].Capabilities.Schema = portico.SchemaJSON
	}
	s, err := New(Config{Routes: rs})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		req := hello.Clone()
		req.Schema, req.MaxOutputTokens = schema, 3
		req.Identity.ClientKey = "careless-tenant"
		if _, err := s.Generate(context.Background(), req); err == nil {
			t.Fatalf("request %d with MaxOutputTokens 3 = nil error, want a rejected truncation", i)
		}
	}
	for _, name := range []string{"a", "b"} {
		if st := s.Breaker(name).State(); st != breaker.Closed {
			t.Errorf("breaker %s after one tenant's truncated answers = %v, want closed", name, st)
		}
	}
	req := hello.Clone()
	req.Schema, req.MaxOutputTokens = schema, 256
	req.Identity.ClientKey = "other-tenant"
	if resp, err := s.Generate(context.Background(), req); err != nil || resp.Route != "a" {
		t.Errorf("another tenant's request = %+v, %v; want a's answer", resp, err)
	}
}
