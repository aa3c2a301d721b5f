package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
	"google.golang.org/genai"
)

var weatherTool = portico.Tool{
	Name:        "get_weather",
	Description: "weather in a city",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city","days"]}`),
}

var timeTool = portico.Tool{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string","enum":["CET"]}},"required":["tz"]}`)}

// body decodes the n-th recorded request's JSON body.
func body(t *testing.T, s *fakegemini.Server, n int) map[string]any {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(s.Requests()[n].Body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToolCalls(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", ToolCalls: true}}}, gemini.Config{})
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
		if err := json.Unmarshal(tc.Arguments, &args); err != nil || tc.Name != "get_weather" || tc.ID != "gemini_call_0" || args.City == "" || args.Days != 1 {
			t.Errorf("stream %v: tool call = %q %q %s (%v), want get_weather, id gemini_call_0, a city and days 1", stream, tc.ID, tc.Name, tc.Arguments, err)
		}
		if stream && (chunks != 1 || text.Len() != 0 || resp.Text != "") {
			t.Errorf("stream %v: %d progress chunks with text %q, Text %q; want 1 empty chunk and no text", stream, chunks, text.String(), resp.Text)
		}
		decl := body(t, s, 0)["tools"].([]any)[0].(map[string]any)["functionDeclarations"].([]any)[0].(map[string]any)
		if decl["name"] != "get_weather" || decl["parametersJsonSchema"].(map[string]any)["type"] != "object" || decl["description"] != "weather in a city" {
			t.Errorf("stream %v: function declaration sent = %v, want get_weather with its JSON Schema as parametersJsonSchema", stream, decl)
		}
	}
}

// A conversation that carries a tool result gets a text answer; the
// assistant's call goes back as a functionCall part and the result as a
// functionResponse named after the call it answers, as Gemini requires.
func TestToolRoundTrip(t *testing.T) {
	s, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", ToolCalls: true}}}, gemini.Config{})
	req := userReq("m", "weather and time in Rome?")
	req.Tools = []portico.Tool{weatherTool, timeTool}
	req.Messages = append(req.Messages,
		portico.Message{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{
			{ID: "gemini_call_0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome","days":1}`)},
			{ID: "call_b", Name: "get_time", Arguments: json.RawMessage(`{"tz":"CET"}`)},
		}},
		portico.Message{Role: portico.RoleTool, ToolCallID: "gemini_call_0", Content: []portico.Part{{Kind: portico.PartText, Text: "sunny"}}},
		portico.Message{Role: portico.RoleTool, ToolCallID: "call_b", Content: []portico.Part{{Kind: portico.PartText, Text: `{"time":"12:00"}`}}},
	)
	resp, err := m.Generate(context.Background(), req)
	if err != nil || resp.FinishReason != portico.FinishStop || resp.Text == "" {
		t.Fatalf("Generate = %+v, %v; want a text answer", resp, err)
	}
	var sent struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionCall *struct {
					ID   string         `json:"id"`
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
				FunctionResponse *struct {
					ID       string         `json:"id"`
					Name     string         `json:"name"`
					Response map[string]any `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(s.Requests()[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	c := sent.Contents
	if len(c) != 3 || c[1].Role != "model" || c[2].Role != "user" || len(c[1].Parts) != 2 || len(c[2].Parts) != 2 {
		t.Fatalf("contents sent = %+v, want user, model with 2 calls, user with 2 responses", c)
	}
	call0, call1 := c[1].Parts[0].FunctionCall, c[1].Parts[1].FunctionCall
	if call0.ID != "" || call0.Name != "get_weather" || call0.Args["city"] != "Rome" || call1.ID != "call_b" {
		t.Errorf("function calls sent = %+v %+v, want get_weather without an id (the adapter made it), get_time id call_b", call0, call1)
	}
	r0, r1 := c[2].Parts[0].FunctionResponse, c[2].Parts[1].FunctionResponse
	if r0.Name != "get_weather" || r0.ID != "" || r0.Response["output"] != "sunny" || r1.Name != "get_time" || r1.ID != "call_b" || r1.Response["time"] != "12:00" {
		t.Errorf("function responses sent = %+v %+v, want get_weather {output: sunny}, get_time call_b {time: 12:00}", r0, r1)
	}
}

// Several parallel calls, streamed or whole, with Gemini's ids and a
// Gemini 3 thought signature that must come back with its call: it is a
// Thought of the answer tied to the first call's ID, never in an ID.
func TestParallelToolCallsIDsAndSignatures(t *testing.T) {
	cfg := fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", ToolCalls: true, ParallelToolCalls: 3, CallIDs: true, ThoughtSignatures: true}}}
	var whole []portico.ToolCall
	var wholeMsg portico.Message
	for _, stream := range []bool{false, true} {
		_, m := start(t, cfg, gemini.Config{})
		req := userReq("m", "weather and time in Rome?")
		req.Tools = []portico.Tool{weatherTool, timeTool}
		chunks := 0
		if stream {
			req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		names := []string{"get_weather", "get_time", "get_weather"}
		if len(resp.ToolCalls) != 3 || resp.FinishReason != portico.FinishToolCalls || (stream && chunks != 3) {
			t.Fatalf("stream %v: %d tool calls, finish %q, %d chunks; want 3, tool_calls, 3 chunks when streamed", stream, len(resp.ToolCalls), resp.FinishReason, chunks)
		}
		for i, tc := range resp.ToolCalls {
			if tc.Name != names[i] || !json.Valid(tc.Arguments) || !strings.HasPrefix(tc.ID, "fc-") {
				t.Errorf("stream %v: ToolCalls[%d] = %q %q %s, want %s with Gemini's id", stream, i, tc.ID, tc.Name, tc.Arguments, names[i])
			}
		}
		if th := resp.Thoughts; len(th) != 1 || th[0].Dialect != gemini.Dialect || th[0].Kind != "functionCall" || th[0].ID != resp.ToolCalls[0].ID || th[0].Signature == "" {
			t.Errorf("stream %v: Thoughts = %+v, want the first call's signature", stream, th)
		}
		if !stream {
			whole, wholeMsg = resp.ToolCalls, resp.Message()
			continue
		}
		for i := range whole {
			if whole[i].ID != resp.ToolCalls[i].ID || string(whole[i].Arguments) != string(resp.ToolCalls[i].Arguments) {
				t.Errorf("streamed ToolCalls[%d] = %q %s, want %q %s as answered whole", i, resp.ToolCalls[i].ID, resp.ToolCalls[i].Arguments, whole[i].ID, whole[i].Arguments)
			}
		}
	}
	// The next turn sends the calls back; the fake refuses a first call
	// without its signature, as Gemini 3 does.
	s, m := start(t, cfg, gemini.Config{})
	next := userReq("m", "weather and time in Rome?")
	next.Tools = []portico.Tool{weatherTool, timeTool}
	next.Messages = append(next.Messages, wholeMsg)
	for _, tc := range whole {
		next.Messages = append(next.Messages, portico.Message{Role: portico.RoleTool, ToolCallID: tc.ID, Content: []portico.Part{{Kind: portico.PartText, Text: "ok"}}})
	}
	if resp, err := m.Generate(context.Background(), next); err != nil || resp.Text == "" {
		t.Fatalf("Generate(next turn) = %v, %v; want a text answer", resp, err)
	}
	parts := body(t, s, 0)["contents"].([]any)[1].(map[string]any)["parts"].([]any)
	p0 := parts[0].(map[string]any)
	if p0["thoughtSignature"] == nil || p0["functionCall"].(map[string]any)["id"] == nil {
		t.Errorf("first call sent back = %v, want its thoughtSignature and Gemini's id", p0)
	}
	// A Gemini answer whose first call lost its signature (the Thought
	// names another call) is refused, as Gemini 3 refuses it.
	broken := userReq("m", "weather and time in Rome?")
	broken.Tools = next.Tools
	broken.Messages = append(broken.Messages, portico.Message{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "x", Name: "get_weather", Arguments: whole[0].Arguments}},
		Thoughts: wholeMsg.Thoughts},
		portico.Message{Role: portico.RoleTool, ToolCallID: "x", Content: []portico.Part{{Kind: portico.PartText, Text: "ok"}}})
	if _, err := m.Generate(context.Background(), broken); portico.ClassOf(err) != portico.Incompatible {
		t.Errorf("Generate(call without its signature) = %v, want the fake's 400, incompatible (Gemini's own rule)", err)
	}
	// Another provider's answer (no Thought of Gemini's) goes with the
	// dummy signature Gemini documents for calls it did not make.
	other := userReq("m", "weather and time in Rome?")
	other.Tools = next.Tools
	other.Messages = append(other.Messages, portico.Message{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: whole[0].Arguments}},
		Thoughts: []portico.Thought{{Dialect: "anthropic", Kind: "thinking", Text: "hmm", Signature: "c2lnYQ=="}}},
		portico.Message{Role: portico.RoleTool, ToolCallID: "toolu_1", Content: []portico.Part{{Kind: portico.PartText, Text: "ok"}}})
	if resp, err := m.Generate(context.Background(), other); err != nil || resp.Text == "" {
		t.Errorf("Generate(another provider's call) = %v, %v; want an answer", resp, err)
	}
	reqs := s.Requests()
	sent := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(sent, `"thoughtSignature":"c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="`) || strings.Contains(sent, "c2lnYQ==") {
		t.Errorf("another provider's call sent as %s, want the skip signature and not its own thinking", sent)
	}
}

func TestSchema(t *testing.T) {
	for _, strict := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			s, m := start(t, fakegemini.Config{}, gemini.Config{Model: fakegemini.DefaultModel})
			req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "a person")}}
			schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":18},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age","tags"],"additionalProperties":false}`
			req.Schema = &portico.Schema{Name: "person", Strict: strict, JSON: json.RawMessage(schema)}
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
				t.Errorf("strict %v stream %v: Text = %s (%v), want a person object", strict, stream, resp.Text, err)
			}
			gc := body(t, s, 0)["generationConfig"].(map[string]any)
			got, _ := json.Marshal(gc["responseJsonSchema"])
			var want any
			_ = json.Unmarshal([]byte(schema), &want)
			wantJSON, _ := json.Marshal(want)
			if gc["responseMimeType"] != "application/json" || string(got) != string(wantJSON) || gc["responseSchema"] != nil {
				t.Errorf("strict %v: generationConfig sent = %v, want responseMimeType application/json and the schema as responseJsonSchema", strict, gc)
			}
		}
	}
}

func TestMaxTokensAndExtra(t *testing.T) {
	s, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", OutputTokens: 20}}}, gemini.Config{})
	req := userReq("m", "hello")
	req.MaxOutputTokens = 4
	req.Extra = map[string]any{
		"temperature": 0.5, "top_p": float32(0.25), "topK": 40, "seed": 7, "stop": []any{"END"}, "candidateCount": 1,
		"thinkingConfig": map[string]any{"thinkingBudget": 0}, "responseLogprobs": true,
		"safetySettings": []any{map[string]any{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}},
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != portico.FinishLength || resp.Usage.OutputTokens != 4 || len(strings.Fields(resp.Text)) != 4 {
		t.Errorf("Generate = finish %q, output %d, text %q; want length, 4 words", resp.FinishReason, resp.Usage.OutputTokens, resp.Text)
	}
	b := body(t, s, 0)
	gc := b["generationConfig"].(map[string]any)
	stop, _ := gc["stopSequences"].([]any)
	tc, _ := gc["thinkingConfig"].(map[string]any)
	if gc["maxOutputTokens"] != 4.0 || gc["temperature"] != 0.5 || gc["topP"] != 0.25 || gc["topK"] != 40.0 || gc["seed"] != 7.0 || gc["candidateCount"] != 1.0 ||
		len(stop) != 1 || stop[0] != "END" || tc["thinkingBudget"] != 0.0 || gc["responseLogprobs"] != true {
		t.Errorf("generationConfig sent = %v, want the Extra options in Gemini's names", gc)
	}
	if ss, _ := b["safetySettings"].([]any); len(ss) != 1 || gc["safetySettings"] != nil {
		t.Errorf("safetySettings sent = %v at the top level, %v in generationConfig; want it top-level only", b["safetySettings"], gc["safetySettings"])
	}
	// A typed ThinkingConfig goes through the SDK's own field.
	req.Extra = map[string]any{"thinkingConfig": &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](128), IncludeThoughts: true}}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if tc := body(t, s, 1)["generationConfig"].(map[string]any)["thinkingConfig"].(map[string]any); tc["thinkingBudget"] != 128.0 || tc["includeThoughts"] != true {
		t.Errorf("thinkingConfig sent = %v, want budget 128 and includeThoughts", tc)
	}
}

// Parts marked as thoughts are left out of Text and of the chunks.
func TestThoughtPartsLeftOut(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := reply(true,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"let me think","thought":true},{"text":"four"}]},"index":0}]}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"!"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":2,"thoughtsTokenCount":9}}`)
		if !stream {
			h = reply(false, `{"candidates":[{"content":{"role":"model","parts":[{"text":"let me think","thought":true},{"text":"four"},{"text":"!"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":2,"thoughtsTokenCount":9}}`)
		}
		m := raw(t, gemini.Config{}, h)
		resp, chunks, err := generate(t, m, stream)
		if err != nil || resp.Text != "four!" || resp.Usage.OutputTokens != 11 || (stream && strings.Join(chunks, "|") != "four|!") {
			t.Errorf("stream %v: Generate = %q (chunks %q, usage %+v), %v; want four! and 2+9 output tokens", stream, respText(resp), chunks, respUsage(resp), err)
		}
	}
}

func TestImageParts(t *testing.T) {
	s, m := start(t, fakegemini.Config{}, gemini.Config{})
	req := &portico.Request{Model: fakegemini.DefaultModel, Messages: []portico.Message{{Role: portico.RoleUser, Content: []portico.Part{
		{Kind: portico.PartText, Text: "what is this"},
		{Kind: portico.PartImage, ImageURL: "data:image/png;base64,iVBORw0KGgo="},
		{Kind: portico.PartImage, ImageURL: "https://generativelanguage.googleapis.com/v1beta/files/abc-123.jpeg"},
		{Kind: portico.PartImage, ImageURL: "gs://bucket/cat.webp"},
	}}}}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	parts := body(t, s, 0)["contents"].([]any)[0].(map[string]any)["parts"].([]any)
	inline := parts[1].(map[string]any)["inlineData"].(map[string]any)
	file := parts[2].(map[string]any)["fileData"].(map[string]any)
	gs := parts[3].(map[string]any)["fileData"].(map[string]any)
	if len(parts) != 4 || inline["mimeType"] != "image/png" || inline["data"] != "iVBORw0KGgo=" ||
		file["fileUri"] != "https://generativelanguage.googleapis.com/v1beta/files/abc-123.jpeg" || file["mimeType"] != "image/jpeg" ||
		gs["fileUri"] != "gs://bucket/cat.webp" || gs["mimeType"] != "image/webp" {
		t.Errorf("parts sent = %v, want text, inlineData png, fileData jpeg, fileData webp", parts)
	}
}

func TestInvalidRequestPermanent(t *testing.T) {
	s, m := start(t, fakegemini.Config{}, gemini.Config{})
	user := portico.Text(portico.RoleUser, "hi")
	for name, req := range map[string]*portico.Request{
		"unknown role":           {Model: "x", Messages: []portico.Message{{Role: "wizard"}}},
		"tool parameters":        {Model: "x", Messages: []portico.Message{user}, Tools: []portico.Tool{{Name: "t", Parameters: json.RawMessage(`[1`)}}},
		"image in system":        {Model: "x", Messages: []portico.Message{{Role: portico.RoleSystem, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "https://x"}}}}},
		"adapter's Extra key":    {Model: "x", Messages: []portico.Message{user}, Extra: map[string]any{"contents": []any{}}},
		"two candidates":         {Model: "x", Messages: []portico.Message{user}, Extra: map[string]any{"candidateCount": 2}},
		"bad data URL":           {Model: "x", Messages: []portico.Message{{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "data:image/png;base64,!!!"}}}}},
		"relative image URL":     {Model: "x", Messages: []portico.Message{{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: "cat.png"}}}}},
		"result of no call":      {Model: "x", Messages: []portico.Message{user, {Role: portico.RoleTool, ToolCallID: "nope", Content: []portico.Part{{Kind: portico.PartText, Text: "x"}}}}},
		"arguments not object":   {Model: "x", Messages: []portico.Message{user, {Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`[1]`)}}}}},
		"schema not JSON":        {Model: "x", Messages: []portico.Message{user}, Schema: &portico.Schema{JSON: json.RawMessage(`{`)}},
		"max tokens above int32": {Model: "x", Messages: []portico.Message{user}, MaxOutputTokens: 1 << 31},
		"negative max tokens":    {Model: "x", Messages: []portico.Message{user}, MaxOutputTokens: -1},
	} {
		if _, err := m.Generate(context.Background(), req); portico.ClassOf(err) != portico.Permanent {
			t.Errorf("Generate(%s) = %v, want permanent", name, err)
		}
	}
	if _, err := m.Generate(context.Background(), nil); err != portico.ErrNilRequest {
		t.Errorf("Generate(nil) = %v, want portico.ErrNilRequest", err)
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("server saw %d requests, want 0: bad requests are refused locally", n)
	}
}

func TestTruncateFault(t *testing.T) {
	_, m := start(t, faulty(fakegemini.Fault{Kind: fakegemini.FaultTruncate, AfterChunks: 3}), gemini.Config{})
	resp, err := m.Generate(context.Background(), userReq("m", "hello"))
	if err != nil || resp.FinishReason != portico.FinishLength || len(strings.Fields(resp.Text)) != 3 {
		t.Errorf("Generate = %+v, %v; want 3 words and finish length", resp, err)
	}
}

// Finish reasons map onto portico's; filters are content_filter, a
// malformed function call an error.
func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		sent string
		want portico.FinishReason
	}{
		{"SAFETY", portico.FinishContentFilter}, {"RECITATION", portico.FinishContentFilter}, {"BLOCKLIST", portico.FinishContentFilter},
		{"PROHIBITED_CONTENT", portico.FinishContentFilter}, {"SPII", portico.FinishContentFilter}, {"IMAGE_SAFETY", portico.FinishContentFilter},
		{"MAX_TOKENS", portico.FinishLength}, {"CONTINUATION", portico.FinishLength}, {"STOP", portico.FinishStop},
		{"LANGUAGE", "LANGUAGE"}, {"OTHER", "OTHER"},
	} {
		for _, stream := range []bool{false, true} {
			_, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", FinishReason: tc.sent}}}, gemini.Config{})
			req := userReq("m", "hello")
			if stream {
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			resp, err := m.Generate(context.Background(), req)
			if err != nil || resp.FinishReason != tc.want {
				t.Errorf("finish %s stream %v: Generate = %v, %v; want finish %q", tc.sent, stream, respFinish(resp), err, tc.want)
			}
		}
	}
	for _, fr := range []string{"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"} {
		for _, stream := range []bool{false, true} {
			_, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", FinishReason: fr, OutputTokens: 3}}}, gemini.Config{})
			req := userReq("m", "hello")
			if stream {
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			_, err := m.Generate(context.Background(), req)
			pe := asError(t, err)
			if pe.Class != portico.InvalidResponse || pe.Code != fr || pe.Usage == nil || *pe.Usage != (portico.Usage{InputTokens: 4, OutputTokens: 3}) {
				t.Errorf("finish %s stream %v: Generate = %v (usage %+v), want invalid_response code %s with the billed usage", fr, stream, err, pe.Usage, fr)
			}
		}
	}
}

// A blocked prompt (HTTP 200, promptFeedback.blockReason, no candidates) is
// Incompatible: this route refuses this prompt, another may not.
func TestBlockedPrompt(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "m", BlockReason: "PROHIBITED_CONTENT"}}}, gemini.Config{})
		req := userReq("m", "something forbidden")
		chunks := 0
		if stream {
			req.OnChunk = func(portico.Chunk) error { chunks++; return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		pe := asError(t, err)
		if resp != nil || pe.Class != portico.Incompatible || pe.Code != "PROHIBITED_CONTENT" || pe.Reason != "prompt blocked" || pe.Status != 200 || chunks != 0 {
			t.Errorf("stream %v: Generate = %v, want incompatible status 200 code PROHIBITED_CONTENT, no chunk", stream, err)
		}
		if pe.Usage == nil || pe.Usage.InputTokens != 5 || portico.Incompatible.RouteFault() || s.Count("m") != 1 {
			t.Errorf("stream %v: usage %+v, want the prompt's 5 tokens; one request", stream, pe.Usage)
		}
	}
}

// The Vertex AI backend reaches the same server by its own paths.
func TestVertexAIBackend(t *testing.T) {
	s, err := fakegemini.Start(fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "gemini-2.5-flash", OutputTokens: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := newModel(t, gemini.Config{}, genai.ClientConfig{Backend: genai.BackendVertexAI, Project: "proj", Location: "us-central1",
		HTTPClient: s.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: s.URL()}})
	for _, stream := range []bool{false, true} {
		req := userReq("gemini-2.5-flash", "hello")
		if stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil || len(strings.Fields(resp.Text)) != 3 {
			t.Errorf("stream %v: Generate = %v, %v; want 3 words", stream, respText(resp), err)
		}
	}
	if s.Count("gemini-2.5-flash") != 2 {
		t.Errorf("requests = %d, want 2", s.Count("gemini-2.5-flash"))
	}
}

func TestTraceparentReachesServer(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s, err := fakegemini.Start(fakegemini.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cc := clientConfig(s)
	cc.HTTPOptions.Headers = map[string][]string{"traceparent": {tp}}
	m := newModel(t, gemini.Config{}, cc)
	if _, err := m.Generate(context.Background(), userReq(fakegemini.DefaultModel, "hello")); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].Traceparent; got != tp {
		t.Errorf("recorded traceparent = %q, want %q", got, tp)
	}
}

func TestConformance(t *testing.T) {
	modeltest.RunModel(t, func(t *testing.T) portico.Model {
		_, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "suite-model"}}}, gemini.Config{})
		return m
	})
}

// The fake's answer to the conformance request reaches the caller: the
// suite's tool result is tied to its call by id and name.
func TestConformanceRequestAnswered(t *testing.T) {
	s, m := start(t, fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: "suite-model"}}}, gemini.Config{})
	for _, stream := range []bool{false, true} {
		var got strings.Builder
		req := &portico.Request{Model: "suite-model", Messages: []portico.Message{
			portico.Text(portico.RoleSystem, "be brief"),
			{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"cat"}`)}}},
			{Role: portico.RoleTool, ToolCallID: "call_1", Content: []portico.Part{{Kind: portico.PartText, Text: "a cat"}}},
		}, Extra: map[string]any{"temperature": 0.2, "stop": []any{"\n"}}}
		if stream {
			req.OnChunk = func(c portico.Chunk) error { got.WriteString(c.Text); return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if err != nil || resp.Text == "" || (stream && got.String() != resp.Text) {
			t.Errorf("stream %v: Generate = %q, %v; want an answer", stream, respText(resp), err)
		}
	}
	fr := body(t, s, 0)["contents"].([]any)[1].(map[string]any)["parts"].([]any)[0].(map[string]any)["functionResponse"].(map[string]any)
	if fr["name"] != "lookup" || fr["id"] != "call_1" {
		t.Errorf("functionResponse sent = %v, want name lookup id call_1", fr)
	}
}

var _ = errors.New

func respText(r *portico.Response) string {
	if r == nil {
		return "<nil>"
	}
	return r.Text
}

func respFinish(r *portico.Response) portico.FinishReason {
	if r == nil {
		return "<nil>"
	}
	return r.FinishReason
}

func respUsage(r *portico.Response) portico.Usage {
	if r == nil {
		return portico.Usage{}
	}
	return r.Usage
}
