package fakeopenai_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// serve answers one request body through New's Handler, without a listener.
func serve(t *testing.T, cfg fakeopenai.Config, body string) *httptest.ResponseRecorder {
	t.Helper()
	s, err := fakeopenai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
	return rec
}

func TestSchemaAnswers(t *testing.T) {
	cases := []struct {
		schema, want string
	}{
		{`{"type":"object","properties":{"b":{"type":"boolean"},"n":{"type":"number","minimum":3},"i":{"type":"integer"}}}`, `{"b":true,"i":1,"n":3}`},
		{`{"type":"object","properties":{"e":{"enum":["x","y"]},"c":{"const":5},"u":{"anyOf":[{"type":"null"},{"type":"string"}]}}}`, `{"c":5,"e":"x","u":null}`},
		{`{"type":"object","properties":{"d":{"type":"string","format":"date-time"},"l":{"type":"array","minItems":2,"items":{"type":"integer","exclusiveMinimum":0}}}}`, `{"d":"2026-01-01T00:00:00Z","l":[1,1]}`},
		{`{"type":["null","object"],"properties":{"o":{"type":"object","properties":{"k":{"type":"integer","minimum":-2}}}}}`, `{"o":{"k":-2}}`},
		{`{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}}},{"properties":{"z":{"const":"q"}}}]}`, `{"a":1,"z":"q"}`},
	}
	for _, c := range cases {
		body := `{"model":"fake-model","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","strict":true,"schema":` + c.schema + `}}}`
		rec := serve(t, fakeopenai.Config{}, body)
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != 200 {
			t.Fatalf("schema %s: %d %s", c.schema, rec.Code, rec.Body)
		}
		if got := out.Choices[0].Message.Content; got != c.want {
			t.Errorf("answer to schema %s = %s, want %s", c.schema, got, c.want)
		}
	}
}

func TestToolChoice(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},{"type":"function","function":{"name":"b","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}]`
	cases := []struct {
		toolCalls bool
		choice    string
		last      string // role of the last message
		want      string // tool called, "" for a text answer
	}{
		{false, `"auto"`, "user", ""},
		{true, `"auto"`, "user", "a"},
		{true, `"none"`, "user", ""},
		{false, `"required"`, "user", "a"},
		{false, `{"type":"function","function":{"name":"b"}}`, "user", "b"},
		{true, `"auto"`, "tool", ""},
	}
	for _, c := range cases {
		msgs := `[{"role":"user","content":"x"}]`
		if c.last == "tool" {
			msgs = `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"}]`
		}
		body := `{"model":"fake-model","messages":` + msgs + `,` + tools + `,"tool_choice":` + c.choice + `}`
		rec := serve(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{ToolCalls: c.toolCalls}}}, body)
		var out struct {
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		ch := out.Choices[0]
		got := ""
		if len(ch.Message.ToolCalls) > 0 {
			got = ch.Message.ToolCalls[0].Function.Name
		}
		wantFinish := "stop"
		if c.want != "" {
			wantFinish = "tool_calls"
		}
		if got != c.want || ch.FinishReason != wantFinish {
			t.Errorf("ToolCalls %v, tool_choice %s, last %s: called %q (%s), want %q (%s)", c.toolCalls, c.choice, c.last, got, ch.FinishReason, c.want, wantFinish)
		}
		if got == "b" && ch.Message.ToolCalls[0].Function.Arguments != `{"x":1}` {
			t.Errorf("arguments of b = %s, want {\"x\":1}", ch.Message.ToolCalls[0].Function.Arguments)
		}
	}
}

func TestFaultKindString(t *testing.T) {
	if got := fakeopenai.FaultStallMidStream.String(); got != "stall_mid_stream" {
		t.Errorf("FaultStallMidStream.String() = %q, want stall_mid_stream", got)
	}
	if got := fakeopenai.FaultKind(200).String(); got != "FaultKind(200)" {
		t.Errorf("FaultKind(200).String() = %q, want FaultKind(200)", got)
	}
}

// FuzzHandler feeds arbitrary request bodies to the server: it must answer
// each with 200, 400 or 404 and a JSON or event-stream body, never panic or
// hang.
func FuzzHandler(f *testing.F) {
	f.Add(`{"model":"fake-model","messages":[{"role":"user","content":"hi"}]}`)
	f.Add(`{"model":"fake-model","messages":[{"role":"user","content":[{"type":"text","text":"a b"}]}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":2}`)
	f.Add(`{"model":"fake-model","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"array","minItems":1e9,"items":{"type":"string","minLength":1e9}}}}}`)
	f.Add(`{"model":"fake-model","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"p":{"allOf":[{"type":"integer"}]}}}}}],"tool_choice":"required"}`)
	f.Add(`{"model":"nope","messages":[]}`)
	f.Add(`[1,2`)
	f.Fuzz(func(t *testing.T, body string) {
		rec := serve(t, fakeopenai.Config{}, body)
		switch rec.Code {
		case 200, 400, 404:
		default:
			t.Fatalf("status %d for %q, want 200, 400 or 404", rec.Code, body)
		}
		ct := rec.Header().Get("Content-Type")
		if !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("Content-Type %q for %q", ct, body)
		}
		if strings.HasPrefix(ct, "application/json") && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("invalid JSON answer %q for %q", rec.Body, body)
		}
	})
}

// ParallelToolCalls makes several calls, over the declared tools in turn,
// unless the request turns parallel calls off or names one tool; max tokens
// cut the calls where the budget ends.
func TestParallelToolCalls(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},{"type":"function","function":{"name":"b","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}]`
	cases := []struct {
		extra  string
		want   []string // names called, in order
		args   []string
		finish string
	}{
		{``, []string{"a", "b", "a"}, []string{`{}`, `{"x":1}`, `{}`}, "tool_calls"},
		{`,"parallel_tool_calls":true`, []string{"a", "b", "a"}, []string{`{}`, `{"x":1}`, `{}`}, "tool_calls"},
		{`,"parallel_tool_calls":false`, []string{"a"}, []string{`{}`}, "tool_calls"},
		{`,"tool_choice":{"type":"function","function":{"name":"b"}}`, []string{"b"}, []string{`{"x":1}`}, "tool_calls"},
		// {} is one token, {"x":1} two: a budget of 2 ends inside b's arguments.
		{`,"max_completion_tokens":2`, []string{"a", "b"}, []string{`{}`, `{"x"`}, "length"},
		// A budget of 3 ends exactly after b: no empty third call.
		{`,"max_completion_tokens":3`, []string{"a", "b"}, []string{`{}`, `{"x":1}`}, "length"},
	}
	for _, c := range cases {
		body := `{"model":"fake-model","messages":[{"role":"user","content":"x"}],` + tools + c.extra + `}`
		rec := serve(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{ToolCalls: true, ParallelToolCalls: 3}}}, body)
		var out struct {
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		ch := out.Choices[0]
		var names, args []string
		ids := map[string]bool{}
		for _, tc := range ch.Message.ToolCalls {
			names, args = append(names, tc.Function.Name), append(args, tc.Function.Arguments)
			ids[tc.ID] = true
		}
		if strings.Join(names, ",") != strings.Join(c.want, ",") || strings.Join(args, "|") != strings.Join(c.args, "|") || ch.FinishReason != c.finish || len(ids) != len(c.want) {
			t.Errorf("request %s: calls %v %v (%d ids), finish %s; want %v %v, %s", c.extra, names, args, len(ids), ch.FinishReason, c.want, c.args, c.finish)
		}
	}
}
