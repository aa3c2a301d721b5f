package trace

import (
	"encoding/json"

	"github.com/portico-llm/portico"
)

// The JSON shapes of gen_ai.input.messages and gen_ai.output.messages, after
// the GenAI semantic conventions' message schema: a list of messages, each a
// role and a list of typed parts. Every string that may hold user content
// (text, image URL, tool-call arguments and results) has passed through the
// user's capture function before it is placed here.
type msgJSON struct {
	Role         string     `json:"role"`
	Parts        []partJSON `json:"parts"`
	FinishReason string     `json:"finish_reason,omitempty"`
}

type partJSON struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
}

// inputMessages renders req's messages through capture as JSON.
func inputMessages(req *portico.Request, capture func(string) string) string {
	msgs := make([]msgJSON, 0, len(req.Messages))
	for _, m := range req.Messages {
		out := msgJSON{Role: string(m.Role), Parts: []partJSON{}}
		for _, p := range m.Content {
			switch {
			case m.Role == portico.RoleTool:
				out.Parts = append(out.Parts, partJSON{Type: "tool_call_response", ID: m.ToolCallID, Response: capture(p.Text)})
			case p.Kind == portico.PartImage:
				out.Parts = append(out.Parts, partJSON{Type: "uri", Content: capture(p.ImageURL)})
			default:
				out.Parts = append(out.Parts, partJSON{Type: "text", Content: capture(p.Text)})
			}
		}
		out.Parts = appendToolCalls(out.Parts, m.ToolCalls, capture)
		msgs = append(msgs, out)
	}
	return marshal(msgs)
}

// outputMessages renders resp's answer through capture as JSON.
func outputMessages(resp *portico.Response, capture func(string) string) string {
	out := msgJSON{Role: string(portico.RoleAssistant), Parts: []partJSON{}, FinishReason: string(resp.FinishReason)}
	if resp.Text != "" {
		out.Parts = append(out.Parts, partJSON{Type: "text", Content: capture(resp.Text)})
	}
	out.Parts = appendToolCalls(out.Parts, resp.ToolCalls, capture)
	return marshal([]msgJSON{out})
}

func appendToolCalls(parts []partJSON, calls []portico.ToolCall, capture func(string) string) []partJSON {
	for _, tc := range calls {
		parts = append(parts, partJSON{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: capture(string(tc.Arguments))})
	}
	return parts
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen with these types
		return "[]"
	}
	return string(b)
}
