package langchaingo

import (
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
	msgs := make([]llms.MessageContent, 0, len(req.Messages))
	for _, msg := range req.Messages {
		msgs = append(msgs, messageContent(msg))
	}
	opts := callOptions(req)
	resp, err := m.LLM.GenerateContent(ctx, msgs, opts...)
	if err != nil {
		return nil, classify(ctx, err, m.name(req))
	}
	if len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return nil, &portico.Error{Class: portico.InvalidResponse, Model: m.name(req), Reason: "no choice", Err: errors.New("langchaingo: an answer without a choice")}
	}
	return m.response(req, resp.Choices[0]), nil
}

func (m *Model) name(req *portico.Request) string {
	if m.Name != "" {
		return m.Name
	}
	return req.Model
}

// roleTypes maps Portico's roles to langchaingo's message types.
var roleTypes = map[portico.Role]llms.ChatMessageType{
	portico.RoleSystem:    llms.ChatMessageTypeSystem,
	portico.RoleUser:      llms.ChatMessageTypeHuman,
	portico.RoleAssistant: llms.ChatMessageTypeAI,
	portico.RoleTool:      llms.ChatMessageTypeTool,
}

// messageContent maps one Portico message to langchaingo's.
func messageContent(msg portico.Message) llms.MessageContent {
	out := llms.MessageContent{Role: roleTypes[msg.Role]}
	if msg.Role == portico.RoleTool {
		out.Parts = []llms.ContentPart{llms.ToolCallResponse{ToolCallID: msg.ToolCallID, Content: textOf(msg)}}
		return out
	}
	for _, p := range msg.Content {
		switch p.Kind {
		case portico.PartText:
			out.Parts = append(out.Parts, llms.TextContent{Text: p.Text})
		case portico.PartImage:
			out.Parts = append(out.Parts, llms.ImageURLContent{URL: p.ImageURL})
		}
	}
	for _, tc := range msg.ToolCalls {
		out.Parts = append(out.Parts, llms.ToolCall{ID: tc.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	return out
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
		var params any
		if len(t.Parameters) > 0 {
			params = t.Parameters
		}
		opts = append(opts, func(o *llms.CallOptions) {
			o.Tools = append(o.Tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
		})
	}
	opts = append(opts, extraOptions(req.Extra)...)
	if req.OnChunk != nil {
		onChunk := req.OnChunk
		opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			if len(chunk) == 0 {
				return nil
			}
			return onChunk(portico.Chunk{Text: string(chunk)})
		}))
	}
	return opts
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
	r := &portico.Response{Text: c.Content, Model: m.name(req), FinishReason: finishOf(c.StopReason)}
	for _, tc := range c.ToolCalls {
		if tc.FunctionCall == nil {
			continue
		}
		r.ToolCalls = append(r.ToolCalls, portico.ToolCall{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: json.RawMessage(tc.FunctionCall.Arguments)})
	}
	if len(r.ToolCalls) > 0 {
		r.FinishReason = portico.FinishToolCalls
	}
	if c.ReasoningContent != "" {
		r.Thoughts = []portico.Thought{{Text: c.ReasoningContent}}
	}
	r.Usage = usageOf(c.GenerationInfo)
	return r
}

// finishOf maps the stop reasons langchaingo's clients report.
func finishOf(s string) portico.FinishReason {
	switch strings.ToLower(s) {
	case "length", "max_tokens", "max_output_tokens":
		return portico.FinishLength
	case "tool_calls", "tool_use", "function_call":
		return portico.FinishToolCalls
	case "content_filter", "safety":
		return portico.FinishContentFilter
	}
	return portico.FinishStop
}

// usageOf reads the token counts langchaingo's clients put in
// GenerationInfo, under OpenAI's names or Anthropic's.
func usageOf(info map[string]any) portico.Usage {
	n := func(keys ...string) int {
		for _, k := range keys {
			switch v := info[k].(type) {
			case int:
				return v
			case int64:
				return int(v)
			case float64:
				return int(v)
			}
		}
		return 0
	}
	return portico.Usage{InputTokens: n("PromptTokens", "InputTokens"), OutputTokens: n("CompletionTokens", "OutputTokens")}
}
