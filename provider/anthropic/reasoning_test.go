package anthropic_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// The wire shapes these tests read and the fake writes are Anthropic's
// extended thinking, as documented at
// https://docs.claude.com/en/docs/build-with-claude/extended-thinking
// ("Streaming thinking": a thinking content_block_start, thinking_delta
// events, one signature_delta, content_block_stop; "Preserving thinking
// blocks" in tool use) and typed by anthropic-sdk-go v2
// (ThinkingConfigEnabledParam, ThinkingBlockParam, RedactedThinkingBlockParam).

// oneRoute is a stack over one route to the fake's model a, its retry
// layer's first-chunk timeout ttft, the route declaring it reasons.
func oneRoute(t *testing.T, mc fakeanthropic.ModelConfig, ttft time.Duration) (*fakeanthropic.Server, *stack.Stack) {
	t.Helper()
	s, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{mc}})
	st, err := stack.New(stack.Config{Routes: []stack.Route{{
		Route: portico.Route{Name: "a", Model: m, ModelName: mc.Name, Capabilities: portico.Capabilities{Provider: "anthropic", Tools: true, Reasoning: true}},
		Retry: retry.Config{Timeouts: retry.Timeouts{FirstChunk: ttft}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// TestThinkingStreamOneRequest is the figure: an Anthropic stream
// that sends a thinking_delta every 250 ms for 5 s, then text, through a
// retry layer with a 2 s first-chunk timeout, answers after 5 s with
// exactly one HTTP request, its thinking on Response.Thoughts (20 steps,
// signed) and none of it in OnChunk; asked for the reasoning stream, the
// caller gets the 20 steps as Chunk.Reasoning before the text. A stream of
// only ping events for 5 s still times out: 3 requests, each cut at 2 s,
// failing with ErrFirstChunkTimeout.
func TestThinkingStreamOneRequest(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run("stream reasoning "+map[bool]string{false: "off", true: "on"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, st := oneRoute(t, fakeanthropic.ModelConfig{Name: "a", TTFT: 5 * time.Second, ThinkEvery: 250 * time.Millisecond}, 2*time.Second)
				req := userReq("", "hello")
				req.Reasoning = &portico.Reasoning{Stream: stream}
				var text, reasoning strings.Builder
				textFirst := false
				req.OnChunk = func(c portico.Chunk) error {
					if c.Reasoning != "" && text.Len() > 0 {
						textFirst = true
					}
					text.WriteString(c.Text)
					reasoning.WriteString(c.Reasoning)
					return nil
				}
				t0 := time.Now()
				resp, err := st.Generate(t.Context(), req)
				took := time.Since(t0)
				if err != nil || took != 5*time.Second || s.Count("a") != 1 || text.String() != resp.Text || resp.Text == "" {
					t.Fatalf("Generate = %+v, %v after %v, %d requests; want the answer after 5s, 1 request", resp, err, took, s.Count("a"))
				}
				if len(resp.Thoughts) != 1 || resp.Thoughts[0].Dialect != anthropic.Dialect || resp.Thoughts[0].Kind != "thinking" ||
					!strings.HasPrefix(resp.Thoughts[0].Text, "Step 1. Step 2. ") || !strings.HasSuffix(resp.Thoughts[0].Text, "Step 20. ") || resp.Thoughts[0].Signature == "" {
					t.Errorf("Thoughts = %+v, want one signed thinking block of 20 steps", resp.Thoughts)
				}
				want := ""
				if stream {
					want = resp.Thoughts[0].Text
				}
				if reasoning.String() != want || textFirst {
					t.Errorf("reasoning streamed = %q (after text: %v), want %q before the text", reasoning.String(), textFirst, want)
				}
			})
		})
	}
	t.Run("pings", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, st := oneRoute(t, fakeanthropic.ModelConfig{Name: "a", TTFT: 5 * time.Second, PingEvery: 250 * time.Millisecond}, 2*time.Second)
			req := userReq("", "hello")
			req.OnChunk = func(portico.Chunk) error { return nil }
			t0 := time.Now()
			resp, err := st.Generate(t.Context(), req)
			if !errors.Is(err, retry.ErrFirstChunkTimeout) || s.Count("a") != 3 {
				t.Fatalf("Generate = %+v, %v after %v, %d requests; want a first chunk timeout after 3 requests", resp, err, time.Since(t0), s.Count("a"))
			}
		})
	})
}

// wireBlock is a content block of a request body the fake received.
type wireBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
	ID        string `json:"id"`
}

// wireRequest is the part of a Messages request body these tests read.
type wireRequest struct {
	MaxTokens int `json:"max_tokens"`
	Thinking  *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// TestThinkingToolLoop is the Done-when loop: a tool-use loop with
// extended thinking runs three turns through stack.New against the fake,
// streamed and not, thinking and redacted: each turn's answer has its
// thinking block, the first two a tool call and the third text; the
// application appends
// Response.Message() and the tool result, and each request body the fake
// received sends every earlier turn's thinking block back, signature and
// all, first in its assistant turn (the fake refuses a request without
// them, or with a signature it did not make, as the API does).
func TestThinkingToolLoop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stream   bool
		redacted bool
	}{{"whole", false, false}, {"streamed", true, false}, {"redacted", false, true}, {"redacted streamed", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, st := oneRoute(t, fakeanthropic.ModelConfig{Name: "a", ToolCalls: true, ToolRounds: 2, RedactThinking: tc.redacted}, 0)
				req := &portico.Request{
					Messages:  []portico.Message{portico.Text(portico.RoleUser, "what is the weather")},
					Tools:     []portico.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}},
					Reasoning: &portico.Reasoning{Budget: 2000},
				}
				if tc.stream {
					req.OnChunk = func(portico.Chunk) error { return nil }
				}
				var thoughts []portico.Thought
				for turn := 1; turn <= 3; turn++ {
					resp, err := st.Generate(t.Context(), req)
					if err != nil {
						t.Fatalf("turn %d: %v", turn, err)
					}
					calls := 1
					if turn == 3 {
						calls = 0 // the third turn answers in text
					}
					if len(resp.Thoughts) != 1 || len(resp.ToolCalls) != calls || resp.Thoughts[0].Signature == "" || (calls == 0) != (resp.Text != "") {
						t.Fatalf("turn %d: thoughts %+v, calls %+v, text %q; want one thought and %d call(s)", turn, resp.Thoughts, resp.ToolCalls, resp.Text, calls)
					}
					kind, text := "thinking", "Thinking about turn "+string(rune('0'+2*turn-1))+"."
					if tc.redacted {
						kind, text = "redacted_thinking", ""
					}
					if th := resp.Thoughts[0]; th.Kind != kind || th.Text != text || th.Dialect != anthropic.Dialect {
						t.Errorf("turn %d: thought %+v, want %s %q", turn, th, kind, text)
					}
					thoughts = append(thoughts, resp.Thoughts[0])
					if turn == 3 {
						break
					}
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
					var body wireRequest
					if err := json.Unmarshal(r.Body, &body); err != nil {
						t.Fatal(err)
					}
					if body.Thinking == nil || body.Thinking.Type != "enabled" || body.Thinking.BudgetTokens != 2000 || body.MaxTokens != anthropic.DefaultMaxTokens+2000 {
						t.Errorf("request %d: thinking %+v, max_tokens %d; want enabled with 2000, max_tokens %d", i+1, body.Thinking, body.MaxTokens, anthropic.DefaultMaxTokens+2000)
					}
					var sent []portico.Thought
					for _, m := range body.Messages {
						var blocks []wireBlock
						if m.Role != "assistant" || json.Unmarshal(m.Content, &blocks) != nil {
							continue
						}
						if len(blocks) < 2 || !strings.Contains(blocks[0].Type, "thinking") || blocks[1].Type != "tool_use" {
							t.Errorf("request %d: assistant turn %+v, want its thinking block first, then its tool_use", i+1, blocks)
						}
						sig := blocks[0].Signature + blocks[0].Data
						sent = append(sent, portico.Thought{Dialect: anthropic.Dialect, Kind: blocks[0].Type, Text: blocks[0].Thinking, Signature: sig})
					}
					if len(sent) != i {
						t.Fatalf("request %d sent %d thinking blocks back, want %d", i+1, len(sent), i)
					}
					for k := range sent {
						if sent[k] != thoughts[k] {
							t.Errorf("request %d: thinking block %d sent back as %+v, want %+v", i+1, k+1, sent[k], thoughts[k])
						}
					}
				}
			})
		})
	}
}

// TestThinkingAfterAnotherProvider: a conversation whose tool-use turn
// another provider answered (its thought of dialect "gemini") reaches
// Anthropic without that thought, and without thinking, which the API
// would refuse for a tool-use turn that starts with no thinking block; the
// answer still comes, with its own thinking once the loop goes on.
func TestThinkingAfterAnotherProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, st := oneRoute(t, fakeanthropic.ModelConfig{Name: "a"}, 0)
		req := &portico.Request{
			Messages: []portico.Message{
				portico.Text(portico.RoleUser, "what is the weather"),
				{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}},
					Thoughts: []portico.Thought{{Dialect: "gemini", Kind: "functionCall", ID: "call_1", Signature: "c2ln"}}},
				{Role: portico.RoleTool, ToolCallID: "call_1", Content: []portico.Part{{Text: "sunny"}}},
			},
			Tools:     []portico.Tool{{Name: "weather"}},
			Reasoning: &portico.Reasoning{Effort: portico.EffortLow},
		}
		resp, err := st.Generate(t.Context(), req)
		if err != nil || resp.Text == "" || len(resp.Thoughts) != 0 {
			t.Fatalf("Generate = %+v, %v; want a text answer without thoughts", resp, err)
		}
		var body wireRequest
		if err := json.Unmarshal(s.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Thinking != nil || strings.Contains(string(s.Requests()[0].Body), "c2ln") {
			t.Errorf("body %s: want no thinking and no foreign thought", s.Requests()[0].Body)
		}
	})
}

// TestReasoningBudgetAboveMaxTokensIsIncompatible: a budget this route
// cannot fit under the request's MaxOutputTokens (Anthropic's least is
// 1,024) is the route's limit, not the request's fault: Incompatible,
// nothing sent, so a fallback group moves on to a route that can.
func TestReasoningBudgetAboveMaxTokensIsIncompatible(t *testing.T) {
	srv, m := start(t, fakeanthropic.Config{}, anthropic.Config{Model: "claude-sonnet-4-5"})
	req := userReq("", "think")
	req.MaxOutputTokens, req.Reasoning = 600, &portico.Reasoning{Effort: portico.EffortLow}
	_, err := m.Generate(t.Context(), req)
	if portico.ClassOf(err) != portico.Incompatible || !portico.NothingSent(err) || srv.Count("claude-sonnet-4-5") != 0 {
		t.Fatalf("err %v (class %v), %d requests; want incompatible, nothing sent", err, portico.ClassOf(err), srv.Count("claude-sonnet-4-5"))
	}
}
