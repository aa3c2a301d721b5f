package fakeopenai_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// serveResponses answers one Responses API body through s's Handler.
func serveResponses(t *testing.T, s *fakeopenai.Server, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(body)))
	return rec
}

func newServer(t *testing.T, cfg fakeopenai.Config) *fakeopenai.Server {
	t.Helper()
	s, err := fakeopenai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// sse reads an event stream: each event's name, and its data's type and
// sequence_number, which must agree with the name and count from 0.
func sse(t *testing.T, body string) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, n)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("event data %s: %v", d, err)
			}
			if m["type"] != names[len(names)-1] || m["sequence_number"] != float64(len(data)) {
				t.Errorf("event %d: name %s, data type %v sequence_number %v", len(data), names[len(names)-1], m["type"], m["sequence_number"])
			}
			data = append(data, m)
		}
	}
	return names, data
}

// A streamed answer with reasoning and text sends the events of the API
// reference's streaming guide (platform.openai.com/docs/api-reference/
// responses-streaming; openai-go v3.99.0 responses.ResponseStreamEventUnion
// names the same types), in its order, each event named by its type and
// numbered from 0, with no [DONE]; the whole answer's output is the same
// items as the terminal event's.
func TestResponsesEvents(t *testing.T) {
	s := newServer(t, fakeopenai.Config{Models: []fakeopenai.ModelConfig{{OutputTokens: 2, CachedInputTokens: 1}}})
	const req = `"model":"fake-model","input":"hi there","reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"],"store":false`
	rec := serveResponses(t, s, `{`+req+`,"stream":true}`)
	names, data := sse(t, rec.Body.String())
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !slices.Equal(names, want) || strings.Contains(rec.Body.String(), "[DONE]") {
		t.Fatalf("events = %v, want %v and no [DONE]", names, want)
	}
	final, _ := json.Marshal(data[len(data)-1]["response"])
	whole := serveResponses(t, s, `{`+req+`}`).Body.Bytes()
	var a, b map[string]any
	_ = json.Unmarshal(final, &a)
	_ = json.Unmarshal(whole, &b)
	out, _ := json.Marshal(b["output"])
	if fo, _ := json.Marshal(a["output"]); string(fo) != string(out) {
		t.Errorf("streamed output %s != whole output %s", fo, out)
	}
	usage, _ := json.Marshal(b["usage"])
	if want := `{"input_tokens":5,"input_tokens_details":{"cache_write_tokens":0,"cached_tokens":1},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":9}`; string(usage) != want {
		t.Errorf("usage = %s, want %s", usage, want)
	}
	var items []struct {
		Type             string `json:"type"`
		EncryptedContent string `json:"encrypted_content"`
	}
	_ = json.Unmarshal(out, &items)
	if len(items) != 2 || items[0].Type != "reasoning" || !strings.HasPrefix(items[0].EncryptedContent, "fakeenc_") || items[1].Type != "message" {
		t.Errorf("output = %s, want a reasoning item with encrypted content, then a message", out)
	}
}

// The server checks the reasoning items sent back as the API does: its
// own encrypted content passes, another's is a 400
// invalid_encrypted_content, and an item without it is a 400 unless a
// stored response made it; previous_response_id names a stored response
// or is a 400 previous_response_not_found.
func TestResponsesState(t *testing.T) {
	s := newServer(t, fakeopenai.Config{})
	first := serveResponses(t, s, `{"model":"fake-model","input":"hi","reasoning":{"effort":"low"},"include":["reasoning.encrypted_content"],"store":false}`)
	var r struct {
		ID     string
		Output []json.RawMessage
	}
	if err := json.Unmarshal(first.Body.Bytes(), &r); err != nil || len(r.Output) != 2 {
		t.Fatalf("first answer %s", first.Body)
	}
	rs := string(r.Output[0])
	var item map[string]any
	_ = json.Unmarshal(r.Output[0], &item)
	item["encrypted_content"] = "fakeenc_other"
	forged, _ := json.Marshal(item)
	delete(item, "encrypted_content")
	bare, _ := json.Marshal(item)
	cases := []struct {
		body, code string
		status     int
	}{
		{`{"model":"fake-model","input":[{"role":"user","content":"hi"},` + rs + `,{"role":"user","content":"more"}],"store":false}`, "", 200},
		{`{"model":"fake-model","input":[{"role":"user","content":"hi"},` + string(forged) + `],"store":false}`, "invalid_encrypted_content", 400},
		{`{"model":"fake-model","input":[{"role":"user","content":"hi"},` + string(bare) + `],"store":false}`, "", 400},
		{`{"model":"fake-model","input":"more","previous_response_id":"` + r.ID + `"}`, "previous_response_not_found", 400},
		{`{"model":"fake-model","input":[{"type":"web_search_call"}]}`, "invalid_value", 400},
	}
	for _, c := range cases {
		rec := serveResponses(t, s, c.body)
		var e struct{ Error struct{ Code *string } }
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		code := ""
		if e.Error.Code != nil {
			code = *e.Error.Code
		}
		if rec.Code != c.status || code != c.code {
			t.Errorf("%s: %d code %q, want %d %q", c.body, rec.Code, code, c.status, c.code)
		}
	}
	stored := serveResponses(t, s, `{"model":"fake-model","input":"hi","reasoning":{"effort":"low"}}`)
	_ = json.Unmarshal(stored.Body.Bytes(), &r)
	_ = json.Unmarshal(r.Output[0], &item)
	bare, _ = json.Marshal(item)
	for _, body := range []string{
		`{"model":"fake-model","input":"more","previous_response_id":"` + r.ID + `"}`,
		`{"model":"fake-model","input":[{"role":"user","content":"hi"},` + string(bare) + `]}`,
	} {
		if rec := serveResponses(t, s, body); rec.Code != 200 {
			t.Errorf("%s: %d %s, want 200", body, rec.Code, rec.Body)
		}
	}
}

// FuzzResponsesHandler feeds arbitrary Responses API bodies to the
// server: it must answer each with 200, 400 or 404 and a JSON or
// event-stream body, never panic or hang.
func FuzzResponsesHandler(f *testing.F) {
	f.Add(`{"model":"fake-model","input":"hi"}`)
	f.Add(`{"model":"fake-model","input":[{"role":"user","content":[{"type":"input_text","text":"a b"}]}],"stream":true,"max_output_tokens":2,"reasoning":{"summary":"auto"}}`)
	f.Add(`{"model":"fake-model","input":[{"type":"reasoning","id":"rs_1","encrypted_content":"x"}],"previous_response_id":"resp_1"}`)
	f.Add(`{"model":"fake-model","input":"x","tools":[{"type":"function","name":"a","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"a"},"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"array"}}}}`)
	f.Add(`{"model":"fake-model","input":7}`)
	f.Fuzz(func(t *testing.T, body string) {
		s, err := fakeopenai.New(fakeopenai.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rec := serveResponses(t, s, body)
		switch rec.Code {
		case 200, 400, 404:
		default:
			t.Fatalf("status %d for %q, want 200, 400 or 404", rec.Code, body)
		}
		ct := rec.Header().Get("Content-Type")
		if strings.HasPrefix(ct, "application/json") && !json.Valid(rec.Body.Bytes()) || !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("Content-Type %q, body %q for %q", ct, rec.Body, body)
		}
	})
}
