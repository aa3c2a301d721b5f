package langchaingo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/portico-llm/portico"
)

// Model is a langchaingo llms.Model as a Portico Model. The zero value is
// not usable: set LLM. It is safe for concurrent use if LLM is.
type Model struct {
	// LLM answers every call.
	LLM llms.Model
	// Name is the model reported in Response.Model and errors; "" reports
	// the request's Model. The model called is the one LLM was built for:
	// like Portico's adapters, Model does not send Request.Model on.
	Name string
}

var _ portico.Model = (*Model)(nil)

// New returns l as a Portico Model named name.
func New(l llms.Model, name string) *Model { return &Model{LLM: l, Name: name} }

// Generate sends req to m.LLM. The request's messages, tools, schema (as
// JSON mode), MaxOutputTokens, Extra sampling options and OnChunk map to
// langchaingo's; an error is a classified *portico.Error ([Classify]).
func (m *Model) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	resp, err := m.LLM.GenerateContent(ctx, messageContents(req.Messages), callOptions(req)...)
	if err != nil {
		return nil, classify(ctx, err, m.name(req))
	}
	if len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return nil, &portico.Error{Class: portico.InvalidResponse, Model: m.name(req), Reason: "no choice", Err: errors.New("langchaingo: an answer without a choice")}
	}
	return m.response(req, resp.Choices[0]), nil
}

// name is the model to report: m.Name, or the request's Model.
func (m *Model) name(req *portico.Request) string { return cmp.Or(m.Name, req.Model) }

// roleTypes maps Portico's roles to langchaingo's message types.
var roleTypes = map[portico.Role]llms.ChatMessageType{
	portico.RoleSystem:    llms.ChatMessageTypeSystem,
	portico.RoleUser:      llms.ChatMessageTypeHuman,
	portico.RoleAssistant: llms.ChatMessageTypeAI,
	portico.RoleTool:      llms.ChatMessageTypeTool,
}

// messageContents maps Portico's messages to langchaingo's.
func messageContents(msgs []portico.Message) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs))
	for _, msg := range msgs {
		out = append(out, messageContent(msg))
	}
	return out
}

// messageContent maps one Portico message to langchaingo's.
func messageContent(msg portico.Message) llms.MessageContent {
	out := llms.MessageContent{Role: roleTypes[msg.Role]}
	if msg.Role == portico.RoleTool {
		out.Parts = []llms.ContentPart{llms.ToolCallResponse{ToolCallID: msg.ToolCallID, Content: textOf(msg)}}
		return out
	}
	for _, p := range msg.Content {
		out.Parts = appendPart(out.Parts, p)
	}
	for _, tc := range msg.ToolCalls {
		out.Parts = append(out.Parts, llms.ToolCall{ID: tc.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	return out
}

// appendPart appends p to parts if it is text or an image.
func appendPart(parts []llms.ContentPart, p portico.Part) []llms.ContentPart {
	switch p.Kind {
	case portico.PartText:
		return append(parts, llms.TextContent{Text: p.Text})
	case portico.PartImage:
		return append(parts, llms.ImageURLContent{URL: p.ImageURL})
	}
	return parts
}

// textOf is the text of msg's parts, concatenated.
func textOf(msg portico.Message) string {
	var b strings.Builder
	for _, p := range msg.Content {
		b.WriteString(p.Text)
	}
	return b.String()
}

// callOptions maps the rest of req to langchaingo's options.
func callOptions(req *portico.Request) []llms.CallOption {
	var opts []llms.CallOption
	if req.MaxOutputTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(req.MaxOutputTokens))
	}
	if req.Schema != nil {
		opts = append(opts, llms.WithJSONMode())
	}
	for _, t := range req.Tools {
		opts = append(opts, withTool(t))
	}
	opts = append(opts, extraOptions(req.Extra)...)
	if req.OnChunk != nil {
		opts = append(opts, withOnChunk(req.OnChunk))
	}
	return opts
}

// withTool adds t to the call's tools.
func withTool(t portico.Tool) llms.CallOption {
	var params any
	if len(t.Parameters) > 0 {
		params = t.Parameters
	}
	return func(o *llms.CallOptions) {
		o.Tools = append(o.Tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
	}
}

// withOnChunk streams the call's text to onChunk, skipping empty chunks.
func withOnChunk(onChunk func(portico.Chunk) error) llms.CallOption {
	return llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
		if len(chunk) == 0 {
			return nil
		}
		return onChunk(portico.Chunk{Text: string(chunk)})
	})
}

// extraOptions maps the Extra keys langchaingo has options for.
func extraOptions(x map[string]any) []llms.CallOption {
	var opts []llms.CallOption
	if v, ok := x["temperature"].(float64); ok {
		opts = append(opts, llms.WithTemperature(v))
	}
	if v, ok := x["top_p"].(float64); ok {
		opts = append(opts, llms.WithTopP(v))
	}
	if v, ok := x["seed"].(int); ok {
		opts = append(opts, llms.WithSeed(v))
	}
	if v, ok := x["stop"].([]string); ok {
		opts = append(opts, llms.WithStopWords(v))
	}
	return opts
}

// response maps langchaingo's choice to a Portico answer.
func (m *Model) response(req *portico.Request, c *llms.ContentChoice) *portico.Response {
	r := &portico.Response{Text: c.Content, Model: m.name(req), FinishReason: finishOf(c.StopReason),
		ToolCalls: toolCallsOf(c.ToolCalls), Usage: usageOf(c.GenerationInfo)}
	if len(r.ToolCalls) > 0 {
		r.FinishReason = portico.FinishToolCalls
	}
	if c.ReasoningContent != "" {
		r.Thoughts = []portico.Thought{{Text: c.ReasoningContent}}
	}
	return r
}

// toolCallsOf maps langchaingo's tool calls, skipping any without a function.
func toolCallsOf(calls []llms.ToolCall) []portico.ToolCall {
	var out []portico.ToolCall
	for _, tc := range calls {
		if tc.FunctionCall != nil {
			out = append(out, portico.ToolCall{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: json.RawMessage(tc.FunctionCall.Arguments)})
		}
	}
	return out
}

// finishes maps the stop reasons langchaingo's clients report, lowercased;
// any other is FinishStop.
var finishes = map[string]portico.FinishReason{
	"length": portico.FinishLength, "max_tokens": portico.FinishLength, "max_output_tokens": portico.FinishLength,
	"tool_calls": portico.FinishToolCalls, "tool_use": portico.FinishToolCalls, "function_call": portico.FinishToolCalls,
	"content_filter": portico.FinishContentFilter, "safety": portico.FinishContentFilter,
}

// finishOf maps the stop reasons langchaingo's clients report.
func finishOf(s string) portico.FinishReason {
	return cmp.Or(finishes[strings.ToLower(s)], portico.FinishStop)
}

// usageOf reads the token counts langchaingo's clients put in
// GenerationInfo, under OpenAI's names or Anthropic's.
func usageOf(info map[string]any) portico.Usage {
	return portico.Usage{InputTokens: count(info, "PromptTokens", "InputTokens"), OutputTokens: count(info, "CompletionTokens", "OutputTokens")}
}

// count is the number under the first of keys that info holds as a number;
// 0 when none does.
func count(info map[string]any, keys ...string) int {
	for _, k := range keys {
		if n, ok := intOf(info[k]); ok {
			return n
		}
	}
	return 0
}

// intOf is v as an int, if it is an int, int64 or float64.
func intOf(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		return int(v), true
	}
	return 0, false
}
