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
	req.OnChunk = streamTo(ctx, &o)
	if o.StreamingReasoningFunc != nil {
		req.Reasoning = &portico.Reasoning{Stream: true}
	}
	resp, err := l.Model.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	return contentResponse(resp), nil
}

// streamTo returns an OnChunk passing text and reasoning to o's
// StreamingReasoningFunc or, without one, text to its StreamingFunc; nil
// when o streams to neither.
func streamTo(ctx context.Context, o *llms.CallOptions) func(portico.Chunk) error {
	switch {
	case o.StreamingReasoningFunc != nil:
		return reasoningTo(ctx, o.StreamingReasoningFunc)
	case o.StreamingFunc != nil:
		return textTo(ctx, o.StreamingFunc)
	}
	return nil
}

// reasoningTo passes each chunk's reasoning and text to f, skipping a chunk
// with neither.
func reasoningTo(ctx context.Context, f func(context.Context, []byte, []byte) error) func(portico.Chunk) error {
	return func(c portico.Chunk) error {
		if c.Text == "" && c.Reasoning == "" {
			return nil
		}
		return f(ctx, []byte(c.Reasoning), []byte(c.Text))
	}
}

// textTo passes each chunk's text to f, skipping a chunk without text.
func textTo(ctx context.Context, f func(context.Context, []byte) error) func(portico.Chunk) error {
	return func(c portico.Chunk) error {
		if c.Text == "" {
			return nil
		}
		return f(ctx, []byte(c.Text))
	}
}

// refuse is the error of a call Portico cannot carry.
func refuse(format string, args ...any) error {
	return &portico.Error{Class: portico.Permanent, NotSent: true, Reason: "langchaingo", Err: fmt.Errorf(format, args...)}
}

// request maps a langchaingo call to a Portico request.
func request(messages []llms.MessageContent, o *llms.CallOptions) (*portico.Request, error) {
	if max(o.CandidateCount, o.N) > 1 {
		return nil, refuse("more than one candidate")
	}
	msgs, err := messagesOfAll(messages)
	if err != nil {
		return nil, err
	}
	tools, err := toolsOf(o)
	if err != nil {
		return nil, err
	}
	req := &portico.Request{Model: o.Model, Messages: msgs, Tools: tools, MaxOutputTokens: o.MaxTokens, Extra: extra(o)}
	if o.JSONMode { // any JSON object: the schema every validator and adapter reads
		req.Schema = &portico.Schema{Name: "json_object", JSON: json.RawMessage(`{"type":"object"}`)}
	}
	return req, nil
}

// messagesOfAll maps langchaingo's messages to Portico's ([messagesOf]).
func messagesOfAll(messages []llms.MessageContent) ([]portico.Message, error) {
	var out []portico.Message
	for _, m := range messages {
		msgs, err := messagesOf(m)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
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
	b := messageBuilder{out: portico.Message{Role: role}}
	for _, p := range m.Parts {
		if err := b.add(p); err != nil {
			return nil, err
		}
	}
	return b.messages()
}

// messageBuilder collects one langchaingo message's parts: its content and
// tool calls in out, its tool results in results.
type messageBuilder struct {
	out     portico.Message
	results []portico.Message
}

// add maps the part p, refusing a part Portico cannot carry.
func (b *messageBuilder) add(p llms.ContentPart) error {
	switch p := p.(type) {
	case llms.ToolCall:
		if p.FunctionCall == nil {
			return refuse("tool call %q without a function", p.ID)
		}
		b.out.ToolCalls = append(b.out.ToolCalls, portico.ToolCall{ID: p.ID, Name: p.FunctionCall.Name, Arguments: json.RawMessage(p.FunctionCall.Arguments)})
	case llms.ToolCallResponse:
		b.results = append(b.results, portico.Message{Role: portico.RoleTool, ToolCallID: p.ToolCallID, Content: []portico.Part{{Kind: portico.PartText, Text: p.Content}}})
	default:
		part, ok := contentPart(p)
		if !ok {
			return refuse("message part %T", p)
		}
		b.out.Content = append(b.out.Content, part)
	}
	return nil
}

// messages is the message built, or its tool results, one message each;
// tool results mixed with other parts are refused.
func (b *messageBuilder) messages() ([]portico.Message, error) {
	if len(b.results) == 0 {
		return []portico.Message{b.out}, nil
	}
	if len(b.out.Content) > 0 || len(b.out.ToolCalls) > 0 {
		return nil, refuse("tool results mixed with other parts in one message")
	}
	return b.results, nil
}

// contentPart maps a text or image part; false for any other.
func contentPart(p llms.ContentPart) (portico.Part, bool) {
	switch p := p.(type) {
	case llms.TextContent:
		return portico.Part{Kind: portico.PartText, Text: p.Text}, true
	case llms.ImageURLContent:
		return portico.Part{Kind: portico.PartImage, ImageURL: p.URL}, true
	case llms.BinaryContent:
		return portico.Part{Kind: portico.PartImage, ImageURL: "data:" + p.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)}, true
	}
	return portico.Part{}, false
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
	var out []portico.Tool
	for _, d := range append(defs, o.Functions...) {
		params, err := parameters(d)
		if err != nil {
			return nil, err
		}
		out = append(out, portico.Tool{Name: d.Name, Description: d.Description, Parameters: params})
	}
	return out, nil
}

// parameters is d's parameters as JSON; an empty object's schema when it
// has none.
func parameters(d llms.FunctionDefinition) (json.RawMessage, error) {
	if d.Parameters == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	params, err := json.Marshal(d.Parameters)
	if err != nil {
		return nil, refuse("tool %q: parameters: %v", d.Name, err)
	}
	return params, nil
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
