package stack

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
)

// TestContentFilteredAnswersKeepBreakerClosed: a healthy primary whose
// provider stops the answers to one tenant's prompts with finish reason
// content_filter (OpenAI's content_filter, Gemini's SAFETY or
// PROHIBITED_CONTENT, which the adapters map to FinishContentFilter).
// validate always rejects such an answer as InvalidResponse, a route fault,
// so the breaker counts it: five such prompts from one tenant open the
// primary's breaker and every tenant is sent to the fallback for OpenFor.
// provider/gemini classifies a prompt the provider blocks before answering
// (promptFeedback.blockReason) Incompatible, which the breaker ignores; a
// prompt whose answer is filtered is the request's doing in the same way.
func TestContentFilteredAnswersKeepBreakerClosed(t *testing.T) {
	filtering := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if req.Identity.ClientKey == "edgy-tenant" {
			return &portico.Response{Text: "I", FinishReason: portico.FinishContentFilter, Model: "a"}, nil
		}
		return &portico.Response{Text: "fine", FinishReason: portico.FinishStop, Model: "a"}, nil
	})
	other := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "fine", FinishReason: portico.FinishStop, Model: "b"}, nil
	})
	s, err := New(Config{Routes: []Route{route("a", filtering), route("b", other)}})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		req := hello.Clone()
		req.Identity.ClientKey = "edgy-tenant"
		s.Generate(context.Background(), req)
	}
	if st := s.Breaker("a").State(); st != breaker.Closed {
		t.Errorf("breaker a after one tenant's filtered answers = %v, want closed", st)
	}
	req := hello.Clone()
	req.Identity.ClientKey = "other-tenant"
	if resp, err := s.Generate(context.Background(), req); err != nil || resp.Route != "a" {
		t.Errorf("another tenant's request = %+v, %v; want a's answer", resp, err)
	}
}
