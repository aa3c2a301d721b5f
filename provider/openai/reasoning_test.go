package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

// The shapes here: OpenAI's reasoning_effort request field and
// usage.completion_tokens_details.reasoning_tokens (Chat Completions API
// reference; https://platform.openai.com/docs/guides/reasoning), and the
// reasoning text OpenAI-compatible servers add to a message or delta:
// reasoning_content (DeepSeek's API docs, "Reasoning Model"; vLLM's
// reasoning outputs) or reasoning (OpenRouter's reasoning tokens docs).

// TestReasoningEffortSent: the setting's level is sent as reasoning_effort,
// an effort as it is, a budget as the least effort that covers it; a
// setting with neither sends none; one with an Extra reasoning_effort too
// is refused before sending.
func TestReasoningEffortSent(t *testing.T) {
	for _, tc := range []struct {
		r    portico.Reasoning
		want any // nil: no reasoning_effort
	}{
		{portico.Reasoning{Effort: portico.EffortHigh}, "high"},
		{portico.Reasoning{Effort: portico.EffortMinimal}, "minimal"},
		{portico.Reasoning{Budget: 1000}, "low"},
		{portico.Reasoning{Budget: 3000}, "high"},
		{portico.Reasoning{Stream: true}, nil},
	} {
		s, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "o"}}}, openai.Config{})
		req := userReq("o", "hi")
		req.Reasoning = &tc.r
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(s.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if got := body["reasoning_effort"]; got != tc.want {
			t.Errorf("%+v: reasoning_effort = %v, want %v", tc.r, got, tc.want)
		}
	}
	_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "o"}}}, openai.Config{})
	req := userReq("o", "hi")
	req.Reasoning = &portico.Reasoning{Effort: portico.EffortLow}
	req.Extra = map[string]any{"reasoning_effort": "high"}
	if _, err := m.Generate(context.Background(), req); portico.ClassOf(err) != portico.Permanent {
		t.Errorf("Generate(Reasoning and Extra reasoning_effort) = %v, want Permanent", err)
	}
}

// TestReasoningContent: reasoning text in either field, whole or streamed,
// becomes a Thought of dialect openai-chat (never sent back), reaches
// OnChunk only when Reasoning.Stream asks, and reasoning_tokens is
// Usage.ReasoningTokens, part of OutputTokens.
func TestReasoningContent(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		for _, mode := range []string{"whole", "streamed", "streamed to the caller"} {
			s, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "r", ReasoningField: field, ReasoningTokens: 40, OutputTokens: 3,
				ThinkEvery: 1, TTFT: 3}}}, openai.Config{}) // 3 ns of TTFT, a step every 1 ns: three steps
			req := userReq("r", "hi")
			req.Reasoning = &portico.Reasoning{Effort: portico.EffortLow, Stream: mode == "streamed to the caller"}
			var streamed strings.Builder
			if mode != "whole" {
				req.OnChunk = func(c portico.Chunk) error { streamed.WriteString(c.Reasoning); return nil }
			}
			resp, err := m.Generate(context.Background(), req)
			if err != nil {
				t.Fatalf("%s %s: %v", field, mode, err)
			}
			text := "step 1. step 2. step 3. "
			if mode == "whole" {
				text = "step 1. "
			}
			if len(resp.Thoughts) != 1 || resp.Thoughts[0] != (portico.Thought{Dialect: openai.ChatDialect, Kind: field, Text: text}) {
				t.Errorf("%s %s: Thoughts = %+v, want one %s of %q", field, mode, resp.Thoughts, field, text)
			}
			if want := map[bool]string{true: text}[mode == "streamed to the caller"]; streamed.String() != want {
				t.Errorf("%s %s: OnChunk got reasoning %q, want %q", field, mode, streamed.String(), want)
			}
			if resp.Usage.ReasoningTokens != 40 || resp.Usage.OutputTokens != 43 {
				t.Errorf("%s %s: usage %+v, want 40 reasoning tokens of 43 output", field, mode, resp.Usage)
			}
			next := userReq("r", "hi")
			next.Messages = append(next.Messages, resp.Message(), portico.Text(portico.RoleUser, "and?"))
			if _, err := m.Generate(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			if b := string(s.Requests()[1].Body); strings.Contains(b, "step 1") {
				t.Errorf("%s %s: next request %s sends the reasoning back", field, mode, b)
			}
		}
	}
}
