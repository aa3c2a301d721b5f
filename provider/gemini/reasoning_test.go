package gemini_test

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// The wire shapes here are Gemini's thinking as documented at
// https://ai.google.dev/gemini-api/docs/thinking (thinkingConfig
// includeThoughts and thinkingBudget; thought parts {"text", "thought":
// true}; usageMetadata.thoughtsTokenCount) and
// https://ai.google.dev/gemini-api/docs/thought-signatures (a Gemini 3
// model's thoughtSignature on its first function call part, which must come
// back with that call, and on the last part of a text answer), as typed by
// google.golang.org/genai (ThinkingConfig, Part.Thought, Part.ThoughtSignature).

// geminiStack is a stack over one reasoning route to the fake's model mc.
func geminiStack(t *testing.T, mc fakegemini.ModelConfig, ttft time.Duration) (*fakegemini.Server, *stack.Stack) {
	t.Helper()
	s, m := startPipe(t, fakegemini.Config{Models: []fakegemini.ModelConfig{mc}})
	st, err := stack.New(stack.Config{Routes: []stack.Route{{
		Route: portico.Route{Name: "g", Model: m, ModelName: mc.Name, Capabilities: portico.Capabilities{Provider: "gemini", Tools: true, Reasoning: true}},
		Retry: retry.Config{Timeouts: retry.Timeouts{FirstChunk: ttft}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// TestThoughtSignatureToolLoop is the Done-when loop for Gemini: a
// tool-use loop with thinking runs three turns through stack.New against
// the fake (a Gemini 3 model: it signs its first function call and its text
// answer), streamed and not. Each answer carries its thought summary
// (Response.ReasoningText), its signatures as Thoughts of dialect "gemini"
// (never in a ToolCall.ID), and Usage.ReasoningTokens; the application
// appends Response.Message() and the function's result, and each request
// body the fake received asks for thoughts with the budget and sends every
// earlier call back with its signature (the fake refuses a call without
// it, or with one it did not make for that call, as Gemini 3 does).
func TestThoughtSignatureToolLoop(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, st := geminiStack(t, fakegemini.ModelConfig{Name: "g3", ToolCalls: true, ToolRounds: 2, CallIDs: true, ThoughtSignatures: true}, 0)
				req := &portico.Request{
					Messages:  []portico.Message{portico.Text(portico.RoleUser, "weather in Rome?")},
					Tools:     []portico.Tool{weatherTool},
					Reasoning: &portico.Reasoning{Effort: portico.EffortMedium},
				}
				if stream {
					req.OnChunk = func(c portico.Chunk) error {
						if c.Reasoning != "" {
							t.Errorf("reasoning %q reached OnChunk unasked", c.Reasoning)
						}
						return nil
					}
				}
				var sigs []string
				for turn := 1; turn <= 3; turn++ {
					resp, err := st.Generate(t.Context(), req)
					if err != nil {
						t.Fatalf("turn %d: %v", turn, err)
					}
					want := "Thinking about turn " + string(rune('0'+2*turn-1)) + "."
					if got := resp.ReasoningText(); got != want || resp.Usage.ReasoningTokens != 4 {
						t.Errorf("turn %d: reasoning %q, %d reasoning tokens; want %q, 4", turn, got, resp.Usage.ReasoningTokens, want)
					}
					kind := "functionCall"
					if turn == 3 {
						kind = "text"
					}
					if n := len(resp.Thoughts); n != 2 || resp.Thoughts[1].Kind != kind || resp.Thoughts[1].Dialect != gemini.Dialect || resp.Thoughts[1].Signature == "" {
						t.Fatalf("turn %d: Thoughts = %+v, want the summary and the %s signature", turn, resp.Thoughts, kind)
					}
					if turn == 3 {
						if resp.Text == "" || len(resp.ToolCalls) != 0 {
							t.Errorf("turn 3: text %q, calls %+v; want a text answer", resp.Text, resp.ToolCalls)
						}
						break
					}
					if len(resp.ToolCalls) != 1 || resp.Thoughts[1].ID != resp.ToolCalls[0].ID || strings.Contains(resp.ToolCalls[0].ID, resp.Thoughts[1].Signature) {
						t.Fatalf("turn %d: calls %+v, thoughts %+v; want one call, its signature tied by ID and not in it", turn, resp.ToolCalls, resp.Thoughts)
					}
					sigs = append(sigs, resp.Thoughts[1].Signature)
					next := req.Clone()
					next.Messages = append(append([]portico.Message(nil), req.Messages...), resp.Message(),
						portico.Message{Role: portico.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: []portico.Part{{Text: "sunny"}}})
					req = next
				}
				rs := s.Requests()
				if len(rs) != 3 {
					t.Fatalf("%d requests, want 3", len(rs))
				}
				for i, r := range rs {
					var b struct {
						Contents []struct {
							Role  string `json:"role"`
							Parts []struct {
								Thought          bool            `json:"thought"`
								FunctionCall     json.RawMessage `json:"functionCall"`
								ThoughtSignature string          `json:"thoughtSignature"`
							} `json:"parts"`
						} `json:"contents"`
						GenerationConfig struct {
							ThinkingConfig *struct {
								IncludeThoughts bool `json:"includeThoughts"`
								ThinkingBudget  int  `json:"thinkingBudget"`
							} `json:"thinkingConfig"`
						} `json:"generationConfig"`
					}
					if err := json.Unmarshal(r.Body, &b); err != nil {
						t.Fatal(err)
					}
					if tc := b.GenerationConfig.ThinkingConfig; tc == nil || !tc.IncludeThoughts || tc.ThinkingBudget != 2048 {
						t.Errorf("request %d: thinkingConfig %+v, want includeThoughts and budget 2048", i+1, tc)
					}
					var sent []string
					for _, c := range b.Contents {
						if c.Role != "model" {
							continue
						}
						if len(c.Parts) != 1 || c.Parts[0].FunctionCall == nil || c.Parts[0].Thought {
							t.Errorf("request %d: model turn %+v, want its one signed call (the unsigned summary left out)", i+1, c.Parts)
							continue
						}
						sent = append(sent, c.Parts[0].ThoughtSignature)
					}
					if strings.Join(sent, ",") != strings.Join(sigs[:i], ",") {
						t.Errorf("request %d sent signatures %q back, want %q", i+1, sent, sigs[:i])
					}
				}
			})
		})
	}
}
