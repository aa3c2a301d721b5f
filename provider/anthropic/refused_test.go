package anthropic_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/stack"
)

// TestSystemOnlyMovesOn: a conversation of system text alone, which the
// Messages API refuses (400 invalid_request_error "messages: at least one
// message is required", x-should-retry: false) and an OpenAI-compatible
// route serves. The refusal is this request's on this route: the preset
// moves on to the next route after one call, retries nothing, and the
// Anthropic route's breaker stays closed (it was Permanent, and the group
// stopped at the first route).
func TestSystemOnlyMovesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refusing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if !bytes.Contains(body, []byte(`"messages":[]`)) {
				t.Errorf("request body %s, want no messages", body)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Should-Retry", "false")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"},"request_id":"req_011CX"}`)
		})
		srvA, a := startPipe(t, fakeanthropic.Config{Handler: refusing})
		b := modeltest.NewFake(modeltest.Answer("hello")) // an OpenAI-compatible route serves it
		s, err := stack.New(stack.Config{Routes: []stack.Route{
			{Route: portico.Route{Name: "anthropic", Model: a, ModelName: "m"}},
			{Route: portico.Route{Name: "other", Model: b}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleSystem, "Say hello.")}, MaxOutputTokens: 16}
		for i := range 10 {
			resp, err := s.Generate(t.Context(), req)
			if err != nil || resp.Route != "other" || len(resp.Hops) != 1 || resp.Hops[0].Reason != "incompatible" {
				t.Fatalf("request %d: Generate = %+v, %v; want other's answer after anthropic's incompatible", i, resp, err)
			}
		}
		if st := s.Breaker("anthropic").State(); st != breaker.Closed || srvA.Count("m") != 10 || b.Count() != 10 {
			t.Errorf("anthropic's breaker %v, calls %d and %d; want closed, one call to each route per request", st, srvA.Count("m"), b.Count())
		}
	})
}
