package openai_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

var weatherTool = portico.Tool{
	Name:        "get_weather",
	Description: "weather in a city",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city","days"]}`),
}

func TestToolCalls(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ToolCalls: true}}}, openai.Config{})
		req := userReq("m", "weather in Rome?")
		req.Tools = []portico.Tool{weatherTool}
		var chunks int
		var text strings.Builder
		if stream {
			req.OnChunk = func(c portico.Chunk) error { chunks++; text.WriteString(c.Text); return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: Generate: %v", stream, err)
		}
		if resp.FinishReason != portico.FinishToolCalls || len(resp.ToolCalls) != 1 {
			t.Fatalf("stream %v: Generate = finish %q, %d tool calls; want tool_calls, 1", stream, resp.FinishReason, len(resp.ToolCalls))
		}
		tc := resp.ToolCalls[0]
		var args struct {
			City string `json:"city"`
			Days int    `json:"days"`
		}
		if err := json.Unmarshal(tc.Arguments, &args); err != nil || tc.Name != "get_weather" || !strings.HasPrefix(tc.ID, "call_") || args.City == "" || args.Days != 1 {
			t.Errorf("stream %v: tool call = %q %q %s (%v), want get_weather with a city and days 1", stream, tc.ID, tc.Name, tc.Arguments, err)
		}
		if stream && (chunks == 0 || text.Len() != 0 || resp.Text != "") {
			t.Errorf("stream %v: %d progress chunks with text %q, Text %q; want some empty chunks and no text", stream, chunks, text.String(), resp.Text)
		}
	}
}

// A conversation that carries a tool result gets a text answer, and the
// request's assistant tool calls and tool message reach the server.
func TestToolRoundTrip(t *testing.T) {
	s, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ToolCalls: true}}}, openai.Config{})
	req := userReq("m", "weather in Rome?")
	req.Tools = []portico.Tool{weatherTool}
	req.Messages = append(req.Messages,
		portico.Message{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome","days":1}`)}}},
		portico.Message{Role: portico.RoleTool, ToolCallID: "call_1", Content: []portico.Part{{Kind: portico.PartText, Text: "sunny"}}},
	)
	resp, err := m.Generate(context.Background(), req)
	if err != nil || resp.FinishReason != portico.FinishStop || resp.Text == "" {
		t.Fatalf("Generate = %+v, %v; want a text answer", resp, err)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
		Tools    []struct {
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(s.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 3 || body.Messages[2]["role"] != "tool" || body.Messages[2]["tool_call_id"] != "call_1" {
		t.Errorf("messages sent = %v, want user, assistant, tool call_1", body.Messages)
	}
	if len(body.Tools) != 1 || body.Tools[0].Function.Name != "get_weather" || body.Tools[0].Function.Parameters["type"] != "object" {
		t.Errorf("tools sent = %+v, want get_weather with its schema", body.Tools)
	}
}

func TestSchema(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s, m := start(t, fakeopenai.Config{}, openai.Config{Model: fakeopenai.DefaultModel})
		req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "a person")}}
		req.Schema = &portico.Schema{Name: "person", Strict: true, JSON: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":18},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age","tags"],"additionalProperties":false}`)}
		if stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		var p struct {
			Name string   `json:"name"`
			Age  int      `json:"age"`
			Tags []string `json:"tags"`
		}
		if err := json.Unmarshal([]byte(resp.Text), &p); err != nil || p.Name == "" || p.Age != 18 || len(p.Tags) != 1 {
			t.Errorf("stream %v: Text = %s (%v), want a person object", stream, resp.Text, err)
		}
		var body struct {
			ResponseFormat struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string         `json:"name"`
					Strict bool           `json:"strict"`
					Schema map[string]any `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		_ = json.Unmarshal(s.Requests()[0].Body, &body)
		rf := body.ResponseFormat
		if rf.Type != "json_schema" || rf.JSONSchema.Name != "person" || !rf.JSONSchema.Strict || rf.JSONSchema.Schema["type"] != "object" {
			t.Errorf("response_format sent = %+v, want json_schema person strict", rf)
		}
	}
}

func TestMaxTokensAndExtra(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		s, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 20}}}, openai.Config{LegacyMaxTokens: legacy})
		req := userReq("m", "hello")
		req.MaxOutputTokens = 4
		req.Extra = map[string]any{"temperature": 0.5, "top_p": float32(0.25), "seed": 7, "stop": []string{"END"}, "user": "u1", "vendor_knob": map[string]any{"level": 3}, "odd.key*?": true}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.FinishReason != portico.FinishLength || resp.Usage.OutputTokens != 4 {
			t.Errorf("legacy %v: finish %q, output %d; want length, 4", legacy, resp.FinishReason, resp.Usage.OutputTokens)
		}
		var body map[string]any
		_ = json.Unmarshal(s.Requests()[0].Body, &body)
		key, other := "max_completion_tokens", "max_tokens"
		if legacy {
			key, other = other, key
		}
		if body[key] != 4.0 || body[other] != nil {
			t.Errorf("legacy %v: %s = %v, %s = %v; want 4 and absent", legacy, key, body[key], other, body[other])
		}
		knob, _ := body["vendor_knob"].(map[string]any)
		if body["temperature"] != 0.5 || body["top_p"] != 0.25 || body["seed"] != 7.0 || body["user"] != "u1" || knob["level"] != 3.0 {
			t.Errorf("legacy %v: body = %v, want the Extra keys passed through", legacy, body)
		}
		if body["odd.key*?"] != true {
			t.Errorf("body[odd.key*?] = %v, want true (the key set verbatim)", body["odd.key*?"])
		}
		if stop, _ := body["stop"].([]any); len(stop) != 1 || stop[0] != "END" {
			t.Errorf("stop = %v, want [END]", body["stop"])
		}
	}
}

func TestRateLimitHeaders(t *testing.T) {
	rl := &fakeopenai.RateLimit{Requests: 100, Tokens: 10000, ResetRequests: time.Minute, ResetTokens: 6 * time.Minute}
	cfg := fakeopenai.Config{Models: []fakeopenai.ModelConfig{
		{Name: "m", RateLimit: rl},
		{Name: "limited", RateLimit: rl, Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 429, Fraction: 1}}},
	}}
	_, m := start(t, cfg, openai.Config{})
	for i := 1; i <= 2; i++ {
		req := userReq("m", "hello")
		if i == 2 { // a streamed answer carries them too
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.RateLimit
		// "hello" is 1 word + 3 per message = 4 input tokens, no max tokens: each call takes 4.
		if got == nil || !got.Requests.Known || got.Requests.Limit != 100 || got.Requests.Remaining != 100-i ||
			!got.Tokens.Known || got.Tokens.Limit != 10000 || got.Tokens.Remaining != 10000-4*i {
			t.Fatalf("call %d: RateLimit = %+v, want requests 100/%d tokens 10000/%d", i, got, 100-i, 10000-4*i)
		}
		if got.Requests.Reset <= 0 || got.Requests.Reset > time.Minute || got.Tokens.Reset <= 5*time.Minute || got.Tokens.Reset > 6*time.Minute {
			t.Errorf("call %d: resets = %v, %v; want in (0, 1m] and (5m, 6m]", i, got.Requests.Reset, got.Tokens.Reset)
		}
	}
	_, err := m.Generate(context.Background(), userReq("limited", "hello"))
	pe := asError(t, err)
	if pe.RateLimit == nil || pe.RateLimit.Requests.Remaining != 99 || pe.RateLimit.Tokens.Limit != 10000 {
		t.Errorf("Error.RateLimit = %+v, want requests remaining 99, tokens limit 10000", pe.RateLimit)
	}
	resp, err := m.Generate(context.Background(), userReq("m", "hello"))
	if err != nil || resp.RateLimit == nil {
		t.Fatal(err)
	}
}

func TestNoRateLimitHeaders(t *testing.T) {
	_, m := start(t, fakeopenai.Config{}, openai.Config{})
	resp, err := m.Generate(context.Background(), userReq(fakeopenai.DefaultModel, "hello"))
	if err != nil || resp.RateLimit != nil {
		t.Errorf("Generate = %+v, %v; want RateLimit nil without headers", resp, err)
	}
}

func TestTraceparentReachesServer(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s, m := start(t, fakeopenai.Config{}, openai.Config{}, option.WithHeader("traceparent", tp))
	if _, err := m.Generate(context.Background(), userReq(fakeopenai.DefaultModel, "hello")); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].Traceparent; got != tp {
		t.Errorf("recorded traceparent = %q, want %q", got, tp)
	}
}

func TestImageParts(t *testing.T) {
	s, m := start(t, fakeopenai.Config{}, openai.Config{})
	req := &portico.Request{Model: fakeopenai.DefaultModel, Messages: []portico.Message{{Role: portico.RoleUser, Content: []portico.Part{
		{Kind: portico.PartText, Text: "what is this"}, {Kind: portico.PartImage, ImageURL: "data:image/png;base64,AAAA"},
	}}}}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []struct {
				Type     string `json:"type"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(s.Requests()[0].Body, &body)
	if c := body.Messages[0].Content; len(c) != 2 || c[0].Type != "text" || c[1].Type != "image_url" || c[1].ImageURL.URL != "data:image/png;base64,AAAA" {
		t.Errorf("content sent = %+v, want a text part and an image_url part", c)
	}
}

func TestInvalidRequestPermanent(t *testing.T) {
	s, m := start(t, fakeopenai.Config{}, openai.Config{})
	for _, req := range []*portico.Request{
		{Model: "x", Messages: []portico.Message{{Role: "wizard"}}},
		{Model: "x", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Tools: []portico.Tool{{Name: "t", Parameters: json.RawMessage(`[1`)}}},
		{Model: "x", Messages: []portico.Message{{Role: portico.RoleSystem, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "https://x"}}}}},
		{Model: "x", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Extra: map[string]any{"stream": true}},
		// JSON has no NaN: neither a sampling option nor a passed-through key
		// may send one.
		{Model: "x", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Extra: map[string]any{"temperature": math.NaN()}},
		{Model: "x", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Extra: map[string]any{"vendor_knob": map[string]any{"x": math.Inf(1)}}},
	} {
		if _, err := m.Generate(context.Background(), req); portico.ClassOf(err) != portico.Permanent {
			t.Errorf("Generate(bad request) class = %v, want permanent", portico.ClassOf(err))
		}
	}
	if n := s.Count("x"); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestTruncateFault(t *testing.T) {
	_, m := start(t, faulty(fakeopenai.Fault{Kind: fakeopenai.FaultTruncate, AfterChunks: 3}), openai.Config{})
	resp, err := m.Generate(context.Background(), userReq("m", "hello"))
	if err != nil || resp.FinishReason != portico.FinishLength || len(strings.Fields(resp.Text)) != 3 {
		t.Errorf("Generate = %+v, %v; want 3 words and finish length", resp, err)
	}
}

func TestConformance(t *testing.T) {
	modeltest.RunModel(t, func(t *testing.T) portico.Model {
		_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "suite-model"}}}, openai.Config{})
		return m
	})
}

// The provider's response id reaches Response.ID, streamed or not.
func TestResponseID(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m"}}}, openai.Config{})
		req := userReq("m", "hi")
		if stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil || !strings.HasPrefix(resp.ID, "chatcmpl-") || len(resp.ID) <= len("chatcmpl-") {
			t.Errorf("stream %v: Generate = ID %q, %v; want the fake's chatcmpl- id", stream, respID(resp), err)
		}
	}
}

func respID(r *portico.Response) string {
	if r == nil {
		return "<nil>"
	}
	return r.ID
}

// Malformed requests are refused before anything is sent.
func TestBadRequestsRefusedLocally(t *testing.T) {
	s, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m"}}}, openai.Config{})
	if _, err := m.Generate(context.Background(), nil); err != portico.ErrNilRequest {
		t.Errorf("Generate(nil) = %v, want portico.ErrNilRequest", err)
	}
	req := userReq("m", "hi")
	req.MaxOutputTokens = -5
	if _, err := m.Generate(context.Background(), req); portico.ClassOf(err) != portico.Permanent {
		t.Errorf("Generate(MaxOutputTokens -5) = %v, want a permanent error", err)
	}
	if n := s.Count("m"); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

// Several parallel tool calls from the fake server, assembled from streamed
// deltas or read whole, arrive as the server made them.
func TestParallelToolCallsFromServer(t *testing.T) {
	timeTool := portico.Tool{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string","enum":["CET"]}},"required":["tz"]}`)}
	var whole []portico.ToolCall
	for _, stream := range []bool{false, true} {
		_, m := start(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", ToolCalls: true, ParallelToolCalls: 3}}}, openai.Config{})
		req := userReq("m", "weather and time in Rome?")
		req.Tools = []portico.Tool{weatherTool, timeTool}
		chunks := 0
		if stream {
			req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: Generate: %v", stream, err)
		}
		names := []string{"get_weather", "get_time", "get_weather"}
		if len(resp.ToolCalls) != 3 || resp.FinishReason != portico.FinishToolCalls {
			t.Fatalf("stream %v: %d tool calls, finish %q; want 3, tool_calls", stream, len(resp.ToolCalls), resp.FinishReason)
		}
		ids := map[string]bool{}
		for i, tc := range resp.ToolCalls {
			ids[tc.ID] = true
			if tc.Name != names[i] || !json.Valid(tc.Arguments) {
				t.Errorf("stream %v: ToolCalls[%d] = %q %s, want %s with valid JSON", stream, i, tc.Name, tc.Arguments, names[i])
			}
		}
		if string(resp.ToolCalls[1].Arguments) != `{"tz":"CET"}` || len(ids) != 3 {
			t.Errorf("stream %v: get_time arguments %s, %d distinct ids; want {\"tz\":\"CET\"}, 3", stream, resp.ToolCalls[1].Arguments, len(ids))
		}
		if !stream {
			whole = resp.ToolCalls
			continue
		}
		// The answer is a function of the request: streamed or not, the same calls.
		for i := range whole {
			if whole[i].ID != resp.ToolCalls[i].ID || string(whole[i].Arguments) != string(resp.ToolCalls[i].Arguments) {
				t.Errorf("streamed ToolCalls[%d] = %q %s, want %q %s as answered whole", i, resp.ToolCalls[i].ID, resp.ToolCalls[i].Arguments, whole[i].ID, whole[i].Arguments)
			}
		}
		// One progress chunk per delta: the server sends a call's id and name,
		// then its arguments in pieces of 4 bytes.
		want := 0
		for _, tc := range resp.ToolCalls {
			want += 1 + (len(tc.Arguments)+3)/4
		}
		if chunks != want {
			t.Errorf("streamed tool calls gave %d progress chunks, want %d", chunks, want)
		}
	}
}
