package anthropic_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/provider/anthropic"
)

var weatherTool = portico.Tool{
	Name:        "get_weather",
	Description: "weather in a city",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city","days"]}`),
}

var timeTool = portico.Tool{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string","enum":["CET"]}},"required":["tz"]}`)}

// sent decodes the JSON body of the server's i-th recorded request.
func sent(t *testing.T, s *fakeanthropic.Server, i int) map[string]any {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(s.Requests()[i].Body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestToolCalls(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", ToolCalls: true}}}, anthropic.Config{})
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
		if err := json.Unmarshal(tc.Arguments, &args); err != nil || tc.Name != "get_weather" || !strings.HasPrefix(tc.ID, "toolu_") || args.City == "" || args.Days != 1 {
			t.Errorf("stream %v: tool call = %q %q %s (%v), want get_weather with a city and days 1", stream, tc.ID, tc.Name, tc.Arguments, err)
		}
		// One progress chunk for the block's start, one per input delta of 4 bytes.
		if want := 1 + (len(tc.Arguments)+3)/4; stream && (chunks != want || text.Len() != 0 || resp.Text != "") {
			t.Errorf("stream %v: %d progress chunks with text %q, Text %q; want %d empty chunks and no text", stream, chunks, text.String(), resp.Text, want)
		}
	}
}

// Parallel tool calls, streamed or whole, arrive as the server made them,
// and streamed or not the answer is the same.
func TestParallelToolCalls(t *testing.T) {
	var whole []portico.ToolCall
	for _, stream := range []bool{false, true} {
		_, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", ToolCalls: true, ParallelToolCalls: 3}}}, anthropic.Config{})
		req := userReq("m", "weather and time in Rome?")
		req.Tools = []portico.Tool{weatherTool, timeTool}
		if stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: Generate: %v", stream, err)
		}
		names := []string{"get_weather", "get_time", "get_weather"}
		if len(resp.ToolCalls) != 3 || resp.FinishReason != portico.FinishToolCalls {
			t.Fatalf("stream %v: %d tool calls, finish %q; want 3, tool_calls", stream, len(resp.ToolCalls), resp.FinishReason)
		}
		for i, tc := range resp.ToolCalls {
			if tc.Name != names[i] || !json.Valid(tc.Arguments) {
				t.Errorf("stream %v: ToolCalls[%d] = %q %s, want %s with valid JSON", stream, i, tc.Name, tc.Arguments, names[i])
			}
		}
		if string(resp.ToolCalls[1].Arguments) != `{"tz":"CET"}` {
			t.Errorf("stream %v: get_time arguments %s, want {\"tz\":\"CET\"}", stream, resp.ToolCalls[1].Arguments)
		}
		if !stream {
			whole = resp.ToolCalls
			continue
		}
		for i := range whole {
			if whole[i].ID != resp.ToolCalls[i].ID || string(whole[i].Arguments) != string(resp.ToolCalls[i].Arguments) {
				t.Errorf("streamed ToolCalls[%d] = %q %s, want %q %s as answered whole", i, resp.ToolCalls[i].ID, resp.ToolCalls[i].Arguments, whole[i].ID, whole[i].Arguments)
			}
		}
	}
}

// A whole conversation reaches the wire in Anthropic's shape: system
// messages as the top-level system prompt, images as URL and base64
// sources, tool calls as tool_use blocks, the results of parallel calls in
// one user turn, tools with their schemas; and its answer is text.
func TestRequestEncoding(t *testing.T) {
	s, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", ToolCalls: true}}}, anthropic.Config{})
	req := &portico.Request{Model: "m", Tools: []portico.Tool{weatherTool, {Name: "noop"}}, Messages: []portico.Message{
		portico.Text(portico.RoleSystem, "be brief"),
		{Role: portico.RoleUser, Content: []portico.Part{
			{Kind: portico.PartText, Text: "compare"},
			{Kind: portico.PartText, Text: ""},
			{Kind: portico.PartImage, ImageURL: "https://example.com/a.png"},
			{Kind: portico.PartImage, ImageURL: "data:image/png;base64,AAAA"},
		}},
		{Role: portico.RoleAssistant, Content: []portico.Part{{Kind: portico.PartText, Text: "checking"}}, ToolCalls: []portico.ToolCall{
			{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome","days":1}`)},
			{ID: "toolu_2", Name: "noop"},
		}},
		{Role: portico.RoleTool, ToolCallID: "toolu_1", Content: []portico.Part{{Kind: portico.PartText, Text: "sunny"}}},
		{Role: portico.RoleTool, ToolCallID: "toolu_2"},
		portico.Text(portico.RoleSystem, "in English"),
	}}
	resp, err := m.Generate(context.Background(), req)
	if err != nil || resp.FinishReason != portico.FinishStop || resp.Text == "" {
		t.Fatalf("Generate = %+v, %v; want a text answer (the last turn carries tool results)", resp, err)
	}
	b := sent(t, s, 0)
	checks := []struct{ name, got, want string }{
		{"system", jsonOf(b["system"]), `[{"text":"be brief","type":"text"},{"text":"in English","type":"text"}]`},
		{"user", jsonOf(b["messages"].([]any)[0]), `{"content":[{"text":"compare","type":"text"},{"source":{"type":"url","url":"https://example.com/a.png"},"type":"image"},{"source":{"data":"AAAA","media_type":"image/png","type":"base64"},"type":"image"}],"role":"user"}`},
		{"assistant", jsonOf(b["messages"].([]any)[1]), `{"content":[{"text":"checking","type":"text"},{"id":"toolu_1","input":{"city":"Rome","days":1},"name":"get_weather","type":"tool_use"},{"id":"toolu_2","input":{},"name":"noop","type":"tool_use"}],"role":"assistant"}`},
		{"tool results", jsonOf(b["messages"].([]any)[2]), `{"content":[{"content":[{"text":"sunny","type":"text"}],"tool_use_id":"toolu_1","type":"tool_result"},{"tool_use_id":"toolu_2","type":"tool_result"}],"role":"user"}`},
		{"turns", jsonOf(len(b["messages"].([]any))), `3`},
		{"tools", jsonOf(b["tools"]), `[{"description":"weather in a city","input_schema":{"properties":{"city":{"type":"string"},"days":{"minimum":1,"type":"integer"}},"required":["city","days"],"type":"object"},"name":"get_weather"},{"input_schema":{"type":"object"},"name":"noop"}]`},
		{"max_tokens", jsonOf(b["max_tokens"]), `4096`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s sent = %s, want %s", c.name, c.got, c.want)
		}
	}
}

func TestSchema(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s, m := start(t, fakeanthropic.Config{}, anthropic.Config{Model: fakeanthropic.DefaultModel})
		req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "a person")}}
		req.Schema = &portico.Schema{Name: "person", Strict: true, JSON: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":18},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age","tags"],"additionalProperties":false}`)}
		var text strings.Builder
		if stream {
			req.OnChunk = func(c portico.Chunk) error { text.WriteString(c.Text); return nil }
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
		if stream && text.String() != resp.Text {
			t.Errorf("streamed %q, want the Text %q", text.String(), resp.Text)
		}
		want := `{"format":{"schema":{"additionalProperties":false,"properties":{"age":{"minimum":18,"type":"integer"},"name":{"type":"string"},"tags":{"items":{"type":"string"},"type":"array"}},"required":["name","age","tags"],"type":"object"},"type":"json_schema"}}`
		if got := jsonOf(sent(t, s, 0)["output_config"]); got != want {
			t.Errorf("output_config sent = %s, want %s", got, want)
		}
		if b := sent(t, s, 0); b["tools"] != nil || b["tool_choice"] != nil {
			t.Errorf("tools %v tool_choice %v sent with a schema, want none", b["tools"], b["tool_choice"])
		}
	}
}

func TestMaxTokensAndExtra(t *testing.T) {
	s, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 20}}}, anthropic.Config{MaxTokens: 100})
	req := userReq("m", "hello")
	req.MaxOutputTokens = 4
	req.Extra = map[string]any{
		"temperature": 0.5, "top_p": float32(0.25), "top_k": 7,
		"stop":          []string{"END"},
		"metadata":      map[string]any{"user_id": "u1"},
		"cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"},
		"vendor_knob":   map[string]any{"level": 3},
		"odd.key*?":     true,
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != portico.FinishLength || resp.Usage.OutputTokens != 4 {
		t.Errorf("finish %q, output %d; want length, 4", resp.FinishReason, resp.Usage.OutputTokens)
	}
	b := sent(t, s, 0)
	for k, want := range map[string]string{
		"max_tokens": `4`, "temperature": `0.5`, "top_p": `0.25`, "top_k": `7`,
		"stop_sequences": `["END"]`, "stop": `null`, "metadata": `{"user_id":"u1"}`,
		"cache_control": `{"ttl":"1h","type":"ephemeral"}`, "vendor_knob": `{"level":3}`, "odd.key*?": `true`,
	} {
		if got := jsonOf(b[k]); got != want {
			t.Errorf("body[%q] = %s, want %s", k, got, want)
		}
	}
	// Zero MaxOutputTokens sends Config.MaxTokens.
	if _, err := m.Generate(context.Background(), userReq("m", "hello")); err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(sent(t, s, 1)["max_tokens"]); got != `100` {
		t.Errorf("max_tokens with MaxOutputTokens 0 = %s, want Config.MaxTokens 100", got)
	}
}

// A stop sequence ends the answer before it, with finish reason stop.
func TestStopSequence(t *testing.T) {
	_, m := start(t, fakeanthropic.Config{Seed: 3, Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 6}}}, anthropic.Config{})
	full, err := m.Generate(context.Background(), userReq("m", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(full.Text)
	req := userReq("m", "hello")
	req.Extra = map[string]any{"stop_sequences": []any{" " + words[3]}}
	for _, stream := range []bool{false, true} {
		if stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if want := strings.Join(words[:3], " "); err != nil || resp.Text != want || resp.FinishReason != portico.FinishStop {
			t.Errorf("stream %v: Generate = %q %q, %v; want %q, stop", stream, respText(resp), resp.FinishReason, err, want)
		}
	}
}

func TestTruncateFault(t *testing.T) {
	_, m := start(t, faulty(fakeanthropic.Fault{Kind: fakeanthropic.FaultTruncate, AfterChunks: 3}), anthropic.Config{})
	resp, err := m.Generate(context.Background(), userReq("m", "hello"))
	if err != nil || resp.FinishReason != portico.FinishLength || len(strings.Fields(resp.Text)) != 3 {
		t.Errorf("Generate = %+v, %v; want 3 words and finish length", resp, err)
	}
}

// A non-streamed request the SDK would only send streamed (its max_tokens
// would take more than ten minutes at the SDK's estimate) is streamed and
// assembled.
func TestLargeMaxTokensStreamedInternally(t *testing.T) {
	s, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 5}}}, anthropic.Config{})
	req := userReq("m", "hello")
	req.MaxOutputTokens = 64000
	resp, err := m.Generate(context.Background(), req)
	if err != nil || len(strings.Fields(resp.Text)) != 5 || !s.Requests()[0].Stream {
		t.Errorf("Generate(max_tokens 64000) = %q, %v, streamed %v; want 5 words over a stream", respText(resp), err, s.Requests()[0].Stream)
	}
	req.MaxOutputTokens = 21333
	if _, err := m.Generate(context.Background(), req); err != nil || s.Requests()[1].Stream {
		t.Errorf("Generate(max_tokens 21333) = %v, streamed %v; want a whole answer", err, s.Requests()[1].Stream)
	}
}

// Malformed requests are refused before anything is sent.
func TestBadRequestsRefusedLocally(t *testing.T) {
	s, m := start(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m"}}}, anthropic.Config{})
	if _, err := m.Generate(context.Background(), nil); err != portico.ErrNilRequest {
		t.Errorf("Generate(nil) = %v, want portico.ErrNilRequest", err)
	}
	bad := map[string]func(r *portico.Request){
		"negative max tokens": func(r *portico.Request) { r.MaxOutputTokens = -5 },
		"no model":            func(r *portico.Request) { r.Model = "" },
		"unknown role":        func(r *portico.Request) { r.Messages[0].Role = "critic" },
		"image in system": func(r *portico.Request) {
			r.Messages = append(r.Messages, portico.Message{Role: portico.RoleSystem, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "https://x/a.png"}}})
		},
		"data URL not base64": func(r *portico.Request) {
			r.Messages[0].Content = []portico.Part{{Kind: portico.PartImage, ImageURL: "data:image/png,AAAA"}}
		},
		"tool without call id":   func(r *portico.Request) { r.Messages = append(r.Messages, portico.Message{Role: portico.RoleTool}) },
		"tool params not object": func(r *portico.Request) { r.Tools = []portico.Tool{{Name: "f", Parameters: json.RawMessage(`[1]`)}} },
		"call args not JSON": func(r *portico.Request) {
			r.Messages = append(r.Messages, portico.Message{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{`)}}})
		},
		"schema not JSON":         func(r *portico.Request) { r.Schema = &portico.Schema{JSON: json.RawMessage(`{`)} },
		"Extra sets messages":     func(r *portico.Request) { r.Extra = map[string]any{"messages": nil} },
		"Extra sets max_tokens":   func(r *portico.Request) { r.Extra = map[string]any{"max_tokens": 5} },
		"stop and stop_sequences": func(r *portico.Request) { r.Extra = map[string]any{"stop": "a", "stop_sequences": "b"} },
		"output_config and schema": func(r *portico.Request) {
			r.Schema = &portico.Schema{JSON: json.RawMessage(`{"type":"object"}`)}
			r.Extra = map[string]any{"output_config": map[string]any{"effort": "low"}}
		},
		"Extra not encodable": func(r *portico.Request) { r.Extra = map[string]any{"f": func() {}} },
		"Extra NaN":           func(r *portico.Request) { r.Extra = map[string]any{"temperature": math.NaN()} },
	}
	for name, edit := range bad {
		req := userReq("m", "hi")
		edit(req)
		if _, err := m.Generate(context.Background(), req); portico.ClassOf(err) != portico.Permanent {
			t.Errorf("%s: Generate = %v, want a permanent error", name, err)
		}
	}
	if n := s.Count("m"); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestRateLimitHeaders(t *testing.T) {
	rl := &fakeanthropic.RateLimit{Requests: 100, InputTokens: 10000, OutputTokens: 2000}
	cfg := fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{
		{Name: "m", OutputTokens: 8, RateLimit: rl},
		{Name: "limited", RateLimit: rl, Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 429, Fraction: 1}}},
	}}
	synctest.Test(t, func(t *testing.T) {
		_, m := startPipe(t, cfg)
		for i := 1; i <= 2; i++ {
			req := userReq("m", "hello")
			if i == 2 { // a streamed answer carries them too
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			resp, err := m.Generate(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			// "hello" is 1 word + 3 for the message: 4 input tokens; 8 output.
			q := func(limit, remaining int) portico.Quota {
				return portico.Quota{Known: true, Limit: limit, Remaining: remaining, Reset: time.Minute}
			}
			want := portico.RateLimit{Requests: q(100, 100-i), Tokens: q(12000, 12000-12*i), InputTokens: q(10000, 10000-4*i), OutputTokens: q(2000, 2000-8*i)}
			if resp.RateLimit == nil || *resp.RateLimit != want {
				t.Errorf("call %d: RateLimit = %+v, want %+v", i, resp.RateLimit, want)
			}
		}
		_, err := m.Generate(t.Context(), userReq("limited", "hello"))
		if pe := asError(t, err); pe.Class != portico.RateLimited || pe.RateLimit == nil || pe.RateLimit.Requests.Remaining != 99 {
			t.Errorf("429 error = %v with %+v, want rate_limited carrying the quotas", err, pe.RateLimit)
		}
	})
}

// A provider's enforced output-token limit reaches the caller as
// RateLimited, with the wait until the window resets and the quotas.
func TestEnforcedRateLimitInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", OutputTokens: 8, RateLimit: &fakeanthropic.RateLimit{
			OutputTokens: 10, Window: 2 * time.Second, Enforce: true,
		}}}})
		if _, err := m.Generate(t.Context(), userReq("m", "hello")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		_, err := m.Generate(t.Context(), userReq("m", "hello"))
		pe := asError(t, err)
		// retry-after is in whole seconds (1.5 s rounds up to 2), the reset an
		// RFC 3339 time on the second (2 s after the start).
		want := portico.Quota{Known: true, Limit: 10, Remaining: 2, Reset: 1500 * time.Millisecond}
		if pe.Class != portico.RateLimited || pe.RetryAfter != 2*time.Second || pe.RateLimit == nil || pe.RateLimit.OutputTokens != want {
			t.Errorf("Generate error = %v %v %+v, want rate_limited, 2s, output tokens %+v", pe.Class, pe.RetryAfter, pe.RateLimit, want)
		}
		time.Sleep(pe.RateLimit.OutputTokens.Reset)
		if _, err := m.Generate(t.Context(), userReq("m", "hello")); err != nil {
			t.Errorf("Generate after the reset = %v, want an answer", err)
		}
	})
}

// The real SDK over an in-memory server, in virtual time: a streamed answer's
// chunks arrive at exactly the server's latency, TTFT and token pace.
func TestStreamTimingInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", Latency: 50 * time.Millisecond, TTFT: time.Second, TokensPerSecond: 20, OutputTokens: 5}}})
		req := userReq("m", "hello")
		start := time.Now()
		var at []time.Duration
		req.OnChunk = func(portico.Chunk) error { at = append(at, time.Since(start)); return nil }
		resp, err := m.Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{1050, 1100, 1150, 1200, 1250}
		if len(at) != len(want) {
			t.Fatalf("chunks at %v, want 5", at)
		}
		for i := range want {
			if at[i] != want[i]*time.Millisecond {
				t.Errorf("chunk %d at %v, want %v", i, at[i], want[i]*time.Millisecond)
			}
		}
		if resp.Usage.OutputTokens != 5 || time.Since(start) != 1250*time.Millisecond {
			t.Errorf("Generate = %d tokens after %v, want 5 after 1.25s", resp.Usage.OutputTokens, time.Since(start))
		}
	})
}

// Canceling mid-stream returns at once, with a Canceled error, and leaves no
// goroutine behind: the bubble would not end otherwise.
func TestStreamCancelInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "m", TokensPerSecond: 10, OutputTokens: 100}}})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req := userReq("m", "hello")
		n := 0
		req.OnChunk = func(portico.Chunk) error {
			n++
			if n == 3 {
				time.AfterFunc(50*time.Millisecond, cancel) // between tokens
			}
			return nil
		}
		start := time.Now()
		_, err := m.Generate(ctx, req)
		if portico.ClassOf(err) != portico.Canceled || n != 3 || time.Since(start) != 250*time.Millisecond {
			t.Errorf("Generate = %v after %d chunks and %v, want canceled after 3 chunks at 250ms", err, n, time.Since(start))
		}
	})
}
