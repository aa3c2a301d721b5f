package tokencount

import (
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/spend"
	"github.com/portico-llm/portico/stack"
)

// TestThroughStack: given as the stack's Estimator, the count prices the
// spend budget's reservation: 9 tokens ("hello world" in one message) at
// 0.001, plus one output token at 0.002.
func TestThroughStack(t *testing.T) {
	e := mustNew(t, Config{})
	cfg := stack.Config{
		Routes: []stack.Route{{Route: portico.Route{Name: "gpt", Model: modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop}}),
			Capabilities: portico.Capabilities{InputPrice: 0.001, OutputPrice: 0.002}}}},
		Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 1}}},
	}
	cfg.Fallback.Estimator = e
	s, err := stack.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello world")}, MaxOutputTokens: 1}
	if got, want := s.Spend().Estimate(req), 9*0.001+0.002; got < want-1e-12 || got > want+1e-12 {
		t.Errorf("Estimate = %v, want %v", got, want)
	}
	if _, err := s.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
}
