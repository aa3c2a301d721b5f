package trace

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
)

// FuzzContent renders arbitrary message, answer and argument text through a
// redacting capture function: the result must be valid JSON of the GenAI
// message shape, and no byte of the text may get through unredacted.
func FuzzContent(f *testing.F) {
	f.Add("hello", "answer", `{"a":1}`, "https://x/y.png")
	f.Add("\xff\xfe", "\u2028", `"`, "")
	f.Fuzz(func(t *testing.T, prompt, answer, args, image string) {
		redact := func(s string) string { return "<" + string(rune('0'+len(s)%10)) + ">" }
		req := &portico.Request{Messages: []portico.Message{
			portico.Text(portico.RoleUser, prompt),
			{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartImage, ImageURL: image}}},
			{Role: portico.RoleAssistant, ToolCalls: []portico.ToolCall{{ID: "c", Name: "f", Arguments: []byte(args)}}},
			{Role: portico.RoleTool, ToolCallID: "c", Content: []portico.Part{{Text: answer}}},
		}}
		resp := &portico.Response{Text: answer, ToolCalls: []portico.ToolCall{{ID: "d", Name: "g", Arguments: []byte(args)}}}
		for _, out := range []string{inputMessages(req, redact), outputMessages(resp, redact)} {
			var msgs []struct {
				Role  string `json:"role"`
				Parts []struct {
					Type string `json:"type"`
				} `json:"parts"`
			}
			if err := json.Unmarshal([]byte(out), &msgs); err != nil {
				t.Fatalf("rendered content is not JSON: %v: %s", err, out)
			}
			for _, m := range msgs {
				if m.Role == "" || m.Parts == nil {
					t.Fatalf("message without role or parts: %s", out)
				}
			}
			for _, secret := range []string{prompt, answer, args, image} {
				if len(secret) >= 4 && strings.Contains(out, secret) && !strings.Contains(structural, secret) {
					t.Fatalf("text %q got through unredacted: %s", secret, out)
				}
			}
		}
	})
}

// structural holds every fixed string the renderer writes; a "secret" that is
// a substring of it may legitimately appear.
const structural = `[{"role":"user","parts":[{"type":"text","content":"<0>"},{"type":"uri","content":"<0>"}]},` +
	`{"role":"assistant","parts":[{"type":"tool_call","id":"c","name":"f","arguments":"<0>"}]},` +
	`{"role":"tool","parts":[{"type":"tool_call_response","id":"c","response":"<0>"}]}]` +
	`[{"role":"assistant","parts":[{"type":"text","content":"<0>"},{"type":"tool_call","id":"d","name":"g","arguments":"<0>"}]}]`
