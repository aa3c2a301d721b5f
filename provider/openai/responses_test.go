package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/stack"
)

// startResponses serves cfg over loopback and returns a Responses model
// pointed at it.
func startResponses(t *testing.T, cfg fakeopenai.Config, rc openai.ResponsesConfig, opts ...option.RequestOption) (*fakeopenai.Server, *openai.Responses) {
	t.Helper()
	s, err := fakeopenai.Start(cfg)
	if err != nil {
		t.Fatalf("fakeopenai.Start: %v", err)
	}
	t.Cleanup(s.Close)
	all := append([]option.RequestOption{option.WithBaseURL(s.BaseURL()), option.WithAPIKey("test-key"), option.WithHTTPClient(s.Client())}, opts...)
	return s, openai.NewResponses(rc, all...)
}

// streamed returns req with an OnChunk that collects the chunks' text.
func streamed(req *portico.Request, chunks *[]string) *portico.Request {
	req.OnChunk = func(c portico.Chunk) error { *chunks = append(*chunks, c.Text); return nil }
	return req
}

// lastBody decodes the last request body the server received.
func lastBody(t *testing.T, s *fakeopenai.Server) map[string]any {
	t.Helper()
	reqs := s.Requests()
	var body map[string]any
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// Text, streamed or not: the same words, usage with cached tokens, the
// resp_ id, and a body that keeps nothing at OpenAI.
func TestResponsesText(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s, m := startResponses(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 5, CachedInputTokens: 2}}}, openai.ResponsesConfig{})
		req := userReq("m", "hello there")
		var chunks []string
		if stream {
			req = streamed(req, &chunks)
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: Generate: %v", stream, err)
		}
		want := portico.Usage{InputTokens: 5, OutputTokens: 5, CachedInputTokens: 2}
		if got := len(strings.Fields(resp.Text)); got != 5 || resp.Usage != want || resp.FinishReason != portico.FinishStop || resp.Model != "m" || !strings.HasPrefix(resp.ID, "resp_") {
			t.Errorf("stream %v: Generate = %q usage %+v finish %q model %q id %q, want 5 words, %+v, stop, m, resp_...", stream, resp.Text, resp.Usage, resp.FinishReason, resp.Model, resp.ID, want)
		}
		if stream && (len(chunks) != 5 || strings.Join(chunks, "") != resp.Text) {
			t.Errorf("chunks %q, want 5 adding up to %q", chunks, resp.Text)
		}
		body := lastBody(t, s)
		if body["store"] != false || (body["stream"] == true) != stream {
			t.Errorf("stream %v: body store %v stream %v, want false, %v", stream, body["store"], body["stream"], stream)
		}
		if _, ok := body["include"]; ok {
			t.Errorf("body include = %v, want none for a request that does not reason", body["include"])
		}
	}
}

// Tools: a function call comes back as a ToolCall whose ID is the call_id
// the next turn's function_call_output names; the loop's second turn
// answers in text.
func TestResponsesTools(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s, m := startResponses(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ToolCalls: true}}}, openai.ResponsesConfig{})
		req := userReq("m", "weather?")
		req.Tools = []portico.Tool{{Name: "get", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}}
		var chunks []string
		if stream {
			req = streamed(req, &chunks)
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "get" || string(resp.ToolCalls[0].Arguments) != `{"n":1}` || !strings.HasPrefix(resp.ToolCalls[0].ID, "call_") || resp.FinishReason != portico.FinishToolCalls {
			t.Fatalf("stream %v: Generate = calls %+v finish %q, want one get({\"n\":1}) call_... and tool_calls", stream, resp.ToolCalls, resp.FinishReason)
		}
		tools, _ := json.Marshal(lastBody(t, s)["tools"])
		if string(tools) != `[{"description":"d","name":"get","parameters":{"properties":{"n":{"type":"integer"}},"type":"object"},"strict":false,"type":"function"}]` {
			t.Errorf("body tools = %s", tools)
		}
		next := req.Clone()
		next.Messages = append(append([]portico.Message(nil), req.Messages...),
			portico.Message{Role: portico.RoleAssistant, ToolCalls: resp.ToolCalls},
			portico.Message{Role: portico.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: []portico.Part{{Text: "sunny"}}})
		resp2, err := m.Generate(context.Background(), next)
		if err != nil || resp2.Text == "" || resp2.FinishReason != portico.FinishStop {
			t.Fatalf("turn 2: Generate = %+v, %v; want a text answer", resp2, err)
		}
		input, _ := json.Marshal(lastBody(t, s)["input"])
		want := `[{"content":"weather?","role":"user"},{"arguments":"{\"n\":1}","call_id":"` + resp.ToolCalls[0].ID + `","name":"get","type":"function_call"},{"call_id":"` + resp.ToolCalls[0].ID + `","output":"sunny","type":"function_call_output"}]`
		if string(input) != want {
			t.Errorf("turn 2 input = %s, want %s", input, want)
		}
	}
}

// Structured output: Schema becomes text.format json_schema, and the
// answer is valid against it.
func TestResponsesSchema(t *testing.T) {
	s, m := startResponses(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m"}}}, openai.ResponsesConfig{})
	req := userReq("m", "x")
	req.Schema = &portico.Schema{Name: "s", Strict: true, JSON: json.RawMessage(`{"type":"object","properties":{"b":{"type":"boolean"}},"required":["b"],"additionalProperties":false}`)}
	resp, err := m.Generate(context.Background(), req)
	if err != nil || resp.Text != `{"b":true}` {
		t.Fatalf("Generate = %+v, %v; want {\"b\":true}", resp, err)
	}
	text, _ := json.Marshal(lastBody(t, s)["text"])
	if want := `{"format":{"name":"s","schema":{"additionalProperties":false,"properties":{"b":{"type":"boolean"}},"required":["b"],"type":"object"},"strict":true,"type":"json_schema"}}`; string(text) != want {
		t.Errorf("body text = %s, want %s", text, want)
	}
}

// max_output_tokens cuts the answer: status incomplete is FinishLength.
func TestResponsesIncomplete(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, m := startResponses(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m"}}}, openai.ResponsesConfig{})
		req := userReq("m", "x")
		req.MaxOutputTokens = 3
		var chunks []string
		if stream {
			req = streamed(req, &chunks)
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil || resp.FinishReason != portico.FinishLength || len(strings.Fields(resp.Text)) != 3 {
			t.Errorf("stream %v: Generate = %+v, %v; want 3 words, finish length", stream, resp, err)
		}
	}
}

// Errors inside the stream, after response.created, are classified by
// their code like the chat adapter's error events: response.failed with
// server_error and the error event with rate_limit_exceeded, before and
// after text reached the caller.
func TestResponsesStreamErrors(t *testing.T) {
	cases := []struct {
		f     fakeopenai.Fault
		class portico.Class
	}{
		{fakeopenai.Fault{Kind: fakeopenai.FaultStreamError}, portico.Transient},
		{fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, AfterChunks: 2}, portico.Transient},
		{fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, Event: "error", Code: "rate_limit_exceeded"}, portico.RateLimited},
		{fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, Code: "context_length_exceeded"}, portico.Incompatible},
		{fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, Code: "invalid_prompt", Message: "Invalid prompt: flagged."}, portico.Incompatible},
		{fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429}, portico.RateLimited},
		{fakeopenai.Fault{Kind: fakeopenai.FaultMalformed, AfterChunks: 1}, portico.InvalidResponse},
		{fakeopenai.Fault{Kind: fakeopenai.FaultDisconnect, AfterChunks: 1}, portico.Ambiguous},
	}
	for _, c := range cases {
		_, m := startResponses(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", Script: []fakeopenai.Fault{c.f}}}}, openai.ResponsesConfig{})
		var chunks []string
		resp, err := m.Generate(context.Background(), streamed(userReq("m", "x"), &chunks))
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != c.class || resp != nil {
			t.Errorf("fault %+v: Generate = %v, %v (class %v), want class %v", c.f, resp, err, portico.ClassOf(err), c.class)
		}
		if len(chunks) != c.f.AfterChunks {
			t.Errorf("fault %+v: %d chunks reached the caller, want %d", c.f, len(chunks), c.f.AfterChunks)
		}
	}
}

func TestResponsesConformance(t *testing.T) {
	modeltest.RunModel(t, func(t *testing.T) portico.Model {
		_, m := startResponses(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "suite-model"}}}, openai.ResponsesConfig{})
		return m
	})
}

// okHandler answers every request with one short completed response.
func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":1,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":2}}`))
	})
}

// Usage is the API's usage object read whole: cached tokens and cache
// writes of input_tokens_details, reasoning tokens of
// output_tokens_details (openai-go v3.99.0 responses.ResponseUsage), and
// Response.Cost through the preset prices them; a session's cache
// breakpoint sends prompt_cache_key, as the chat route does.
func TestResponsesUsage(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"o4-mini","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Done.","annotations":[]}]}],"usage":{"input_tokens":100000,"input_tokens_details":{"cached_tokens":80000,"cache_write_tokens":5000},"output_tokens":10000,"output_tokens_details":{"reasoning_tokens":9000},"total_tokens":110000}}`))
	})
	s, m := startResponses(t, fakeopenai.Config{Handler: h}, openai.ResponsesConfig{})
	st, err := stack.New(stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "r", Model: m, ModelName: "o4-mini",
		Capabilities: portico.Capabilities{InputPrice: 1.1e-6, CachedInputPrice: 0.275e-6, OutputPrice: 4.4e-6}}}}})
	if err != nil {
		t.Fatal(err)
	}
	marked := portico.Text(portico.RoleSystem, "rules")
	marked.Cache = portico.Cache5m
	resp, err := st.Generate(context.Background(), &portico.Request{Messages: []portico.Message{marked, portico.Text(portico.RoleUser, "hi")},
		Identity: portico.Identity{SessionID: "s1"}, MaxOutputTokens: 16_000})
	if err != nil {
		t.Fatal(err)
	}
	want := portico.Usage{InputTokens: 100_000, OutputTokens: 10_000, ReasoningTokens: 9_000, CachedInputTokens: 80_000, CacheWriteTokens: 5_000}
	// 15,000 x $1.10 + 5,000 cache writes at the input price (no
	// CacheWritePrice) + 80,000 x $0.275 + 10,000 x $4.40 (o4-mini's
	// prices, https://openai.com/api/pricing).
	if resp.Usage != want || math.Round(resp.Cost*1e8) != math.Round(0.088*1e8) {
		t.Errorf("Usage %+v Cost %.10f, want %+v and $0.088", resp.Usage, resp.Cost, want)
	}
	if got := lastBody(t, s)["prompt_cache_key"]; got != (portico.Identity{SessionID: "s1"}).CacheKey() {
		t.Errorf("prompt_cache_key = %v, want the session's CacheKey", got)
	}
}
