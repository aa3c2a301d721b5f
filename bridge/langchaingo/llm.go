package langchaingo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/portico-llm/portico"
)

// LLM is a Portico Model as a langchaingo llms.Model. The zero value is not
// usable: set Model. It is safe for concurrent use if Model is.
type LLM struct {
	// Model answers every call: a stack, or any Portico Model.
	Model portico.Model
}

var _ llms.Model = (*LLM)(nil)

// NewLLM returns m as a langchaingo llms.Model.
func NewLLM(m portico.Model) *LLM { return &LLM{Model: m} }

// Call answers prompt as a user's message; it returns the answer's text.
func (l *LLM) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, l, prompt, options...)
}

// GenerateContent sends messages through l.Model and returns its answer as
// one choice. A message or option Portico cannot carry (a candidate count
// above 1, a part of an unknown type) fails with a Permanent *portico.Error
// before anything is sent; the Model's errors are returned as they are.
func (l *LLM) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	req, err := request(messages, &o)
	if err != nil {
		return nil, err
	}
	req.Identity, req.Priority = portico.IdentityFrom(ctx), portico.PriorityFrom(ctx)
	if o.StreamingFunc != nil || o.StreamingReasoningFunc != nil {
		req.OnChunk = streamTo(ctx, &o)
		if o.StreamingReasoningFunc != nil {
			r := portico.Reasoning{}
			if req.Reasoning != nil {
				r = *req.Reasoning
			}
			r.Stream = true
			req.Reasoning = &r
		}
	}
	resp, err := l.Model.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	return contentResponse(resp), nil
}

// streamTo returns an OnChunk passing text to o's StreamingFunc and
// reasoning to its StreamingReasoningFunc (or, without one, text to it too).
func streamTo(ctx context.Context, o *llms.CallOptions) func(portico.Chunk) error {
	return func(c portico.Chunk) error {
		switch {
		case o.StreamingReasoningFunc != nil && (c.Text != "" || c.Reasoning != ""):
			return o.StreamingReasoningFunc(ctx, []byte(c.Reasoning), []byte(c.Text))
		case o.StreamingFunc != nil && c.Text != "":
			return o.StreamingFunc(ctx, []byte(c.Text))
		}
		return nil
	}
}

// refuse is the error of a call Portico cannot carry.
func refuse(format string, args ...any) error {
	return &portico.Error{Class: portico.Permanent, NotSent: true, Reason: "langchaingo", Err: fmt.Errorf(format, args...)}
}

// request maps a langchaingo call to a Portico request.
func request(messages []llms.MessageContent, o *llms.CallOptions) (*portico.Request, error) {
	if o.CandidateCount > 1 || o.N > 1 {
		return nil, refuse("more than one candidate")
	}
	req := &portico.Request{Model: o.Model, MaxOutputTokens: o.MaxTokens, Extra: extra(o)}
	for _, m := range messages {
		msgs, err := messagesOf(m)
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, msgs...)
	}
	tools, err := toolsOf(o)
	if err != nil {
		return nil, err
	}
	req.Tools = tools
	if o.JSONMode { // any JSON object: the schema every validator and adapter reads

		req.Schema = &portico.Schema{Name: "json_object", JSON: json.RawMessage(`{"type":"object"}`)}
	}
	return req, nil
}

// extra is o's sampling options under the OpenAI names the adapters read.
func extra(o *llms.CallOptions) map[string]any {
	x := map[string]any{}
	set := func(k string, v any, ok bool) {
		if ok {
			x[k] = v
		}
	}
	set("temperature", o.Temperature, o.Temperature != 0)
	set("top_p", o.TopP, o.TopP != 0)
	set("top_k", o.TopK, o.TopK != 0)
	set("seed", o.Seed, o.Seed != 0)
	set("stop", o.StopWords, len(o.StopWords) > 0)
	set("frequency_penalty", o.FrequencyPenalty, o.FrequencyPenalty != 0)
	set("presence_penalty", o.PresencePenalty, o.PresencePenalty != 0)
	if len(x) == 0 {
		return nil
	}
	return x
}

// roles maps langchaingo's message types to Portico's roles.
var roles = map[llms.ChatMessageType]portico.Role{
	llms.ChatMessageTypeSystem:  portico.RoleSystem,
	llms.ChatMessageTypeHuman:   portico.RoleUser,
	llms.ChatMessageTypeGeneric: portico.RoleUser,
	"user":                      portico.RoleUser,
	llms.ChatMessageTypeAI:      portico.RoleAssistant,
	"assistant":                 portico.RoleAssistant,
	llms.ChatMessageTypeTool:    portico.RoleTool,
}

// messagesOf maps one langchaingo message to Portico's: a tool message
// becomes one message per ToolCallResponse, since Portico ties each result
// to its call.
func messagesOf(m llms.MessageContent) ([]portico.Message, error) {
	role, ok := roles[m.Role]
	if !ok {
		return nil, refuse("message role %q", m.Role)
	}
	out := portico.Message{Role: role}
	var results []portico.Message
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			out.Content = append(out.Content, portico.Part{Kind: portico.PartText, Text: p.Text})
		case llms.ImageURLContent:
			out.Content = append(out.Content, portico.Part{Kind: portico.PartImage, ImageURL: p.URL})
		case llms.BinaryContent:
			out.Content = append(out.Content, portico.Part{Kind: portico.PartImage,
				ImageURL: "data:" + p.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)})
		case llms.ToolCall:
			if p.FunctionCall == nil {
				return nil, refuse("tool call %q without a function", p.ID)
			}
			out.ToolCalls = append(out.ToolCalls, portico.ToolCall{ID: p.ID, Name: p.FunctionCall.Name, Arguments: json.RawMessage(p.FunctionCall.Arguments)})
		case llms.ToolCallResponse:
			results = append(results, portico.Message{Role: portico.RoleTool, ToolCallID: p.ToolCallID, Content: []portico.Part{{Kind: portico.PartText, Text: p.Content}}})
		default:
			return nil, refuse("message part %T", p)
		}
	}
	if len(results) > 0 {
		if len(out.Content) > 0 || len(out.ToolCalls) > 0 {
			return nil, refuse("tool results mixed with other parts in one message")
		}
		return results, nil
	}
	return []portico.Message{out}, nil
}

// toolsOf maps o's tools (and its deprecated functions) to Portico's.
func toolsOf(o *llms.CallOptions) ([]portico.Tool, error) {
	defs := make([]llms.FunctionDefinition, 0, len(o.Tools)+len(o.Functions))
	for _, t := range o.Tools {
		if t.Function == nil {
			return nil, refuse("tool of type %q without a function", t.Type)
		}
		defs = append(defs, *t.Function)
	}
	defs = append(defs, o.Functions...)
	var out []portico.Tool
	for _, d := range defs {
		params, err := json.Marshal(d.Parameters)
		if err != nil {
			return nil, refuse("tool %q: parameters: %v", d.Name, err)
		}
		if d.Parameters == nil {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, portico.Tool{Name: d.Name, Description: d.Description, Parameters: params})
	}
	return out, nil
}

// contentResponse maps a Portico answer to langchaingo's.
func contentResponse(r *portico.Response) *llms.ContentResponse {
	c := &llms.ContentChoice{
		Content:          r.Text,
		StopReason:       string(r.FinishReason),
		ReasoningContent: r.ReasoningText(),
		GenerationInfo: map[string]any{
			"PromptTokens":     r.Usage.InputTokens,
			"CompletionTokens": r.Usage.OutputTokens,
			"TotalTokens":      r.Usage.InputTokens + r.Usage.OutputTokens,
			"InputTokens":      r.Usage.InputTokens, // the names langchaingo's Anthropic client uses
			"OutputTokens":     r.Usage.OutputTokens,
			"Route":            r.Route,
			"Model":            r.Model,
			"Cost":             r.Cost,
		},
	}
	for _, tc := range r.ToolCalls {
		c.ToolCalls = append(c.ToolCalls, llms.ToolCall{ID: tc.ID, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	if len(c.ToolCalls) > 0 {
		c.FuncCall = c.ToolCalls[0].FunctionCall
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{c}}
}
