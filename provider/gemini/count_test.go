package gemini_test

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
	"github.com/portico-llm/portico/spend"
	"github.com/portico-llm/portico/stack"
)

// TestCountTokens: the count of a request with a system instruction is
// the prompt tokens a call of it reports (the fake counts both alike, the
// instruction as a turn), asked once through portico.Counted and then
// cached; a model the server does not know fails the count, and Counted
// falls back to the byte estimate.
func TestCountTokens(t *testing.T) {
	s, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m"}}}, gemini.Config{})
	req := &portico.Request{Model: "m", Messages: []portico.Message{
		portico.Text(portico.RoleSystem, "You answer in one word."),
		portico.Text(portico.RoleUser, "What colour is the sky on a clear day?"),
	}, MaxOutputTokens: 50}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := m.CountTokens(context.Background(), req)
	if err != nil || n != resp.Usage.InputTokens || n == 0 {
		t.Fatalf("CountTokens = %d, %v; want %d, the call's input tokens", n, err, resp.Usage.InputTokens)
	}
	e, err := portico.NewCounted(m.CountTokens, portico.Counting{})
	if err != nil {
		t.Fatal(err)
	}
	before := s.Count("m")
	for range 3 {
		if got := e.EstimateInputTokens(req); got != n {
			t.Errorf("Counted estimate = %d, want %d", got, n)
		}
	}
	if asked := s.Count("m") - before; asked != 1 {
		t.Errorf("the endpoint was asked %d times, want 1 (then cached)", asked)
	}
	unknown := &portico.Request{Model: "nope", Messages: req.Messages}
	if _, err := m.CountTokens(context.Background(), unknown); err == nil {
		t.Error("CountTokens of an unknown model: no error")
	}
	if got, want := e.EstimateInputTokens(unknown), portico.DefaultEstimator.EstimateInputTokens(unknown); got != want {
		t.Errorf("Counted estimate after a failed count = %d, want the byte estimate %d", got, want)
	}
}

// TestCountedThroughStack: Counted over CountTokens as the stack's
// Estimator prices the spend budget's reservation at Gemini's count (6
// tokens at 0.001, and 1 output token at 0.002).
func TestCountedThroughStack(t *testing.T) {
	_, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m"}}}, gemini.Config{})
	e, err := portico.NewCounted(m.CountTokens, portico.Counting{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "gemini", Model: m,
		Capabilities: portico.Capabilities{InputPrice: 0.001, OutputPrice: 0.002}}}},
		Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 1}}}}
	cfg.Fallback.Estimator = e
	s, err := stack.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "one two three")}, MaxOutputTokens: 1}
	n, err := m.CountTokens(context.Background(), req)
	if err != nil || n != 6 {
		t.Fatalf("CountTokens = %d, %v; want 6 (the fake's 3 words + 3 per turn)", n, err)
	}
	if got, want := s.Spend().Estimate(req), float64(n)*0.001+0.002; got < want-1e-12 || got > want+1e-12 {
		t.Errorf("Estimate = %v, want %v", got, want)
	}
	if _, err := s.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}
