package eino

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/portico-llm/portico"
)

// ChatModel is a Portico Model as an eino ToolCallingChatModel. Its methods
// are safe for concurrent use if the Model is; WithTools returns a new
// ChatModel and leaves the receiver unchanged.
type ChatModel struct {
	m     portico.Model
	tools []portico.Tool
}

var _ model.ToolCallingChatModel = (*ChatModel)(nil)

// NewChatModel returns m as an eino ToolCallingChatModel.
func NewChatModel(m portico.Model) *ChatModel { return &ChatModel{m: m} }

// WithTools returns a ChatModel offering tools to the model on every call.
// A tool whose parameters cannot be written as JSON Schema is a Permanent
// *portico.Error.
func (c *ChatModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	pt, err := toolsOf(tools)
	if err != nil {
		return nil, err
	}
	return &ChatModel{m: c.m, tools: pt}, nil
}

// Generate sends input through the Model and returns its answer as an
// assistant message, with ResponseMeta's finish reason and usage.
func (c *ChatModel) Generate(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	req, err := c.request(ctx, input, opts)
	if err != nil {
		return nil, err
	}
	resp, err := c.m.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	return message(resp), nil
}

// Stream sends input through the Model as a streamed call. It returns once
// the first chunk arrived (or the call ended): an error before any chunk is
// its own. The reader yields a message per text chunk and a last one with
// the tool calls and ResponseMeta; an error after the first chunk is the
// reader's. Closing the reader early stops the call.
func (c *ChatModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	req, err := c.request(ctx, input, opts)
	if err != nil {
		return nil, err
	}
	sr, sw := schema.Pipe[*schema.Message](16)
	first := make(chan error, 1) // nil: a chunk came, or the answer; else the error before any chunk
	var once sync.Once
	started := func(err error) { once.Do(func() { first <- err }) }
	req.OnChunk = chunkTo(sw, started)
	go c.answer(ctx, req, sw, started)
	if err := <-first; err != nil {
		sr.Close()
		return nil, err
	}
	return sr, nil
}

// chunkTo sends each chunk to sw as a message, after reporting to started
// that a chunk came; it stops the call once the reader is closed.
func chunkTo(sw *schema.StreamWriter[*schema.Message], started func(error)) func(portico.Chunk) error {
	return func(ch portico.Chunk) error {
		started(nil)
		if sw.Send(&schema.Message{Role: schema.Assistant, Content: ch.Text, ReasoningContent: ch.Reasoning}, nil) {
			return errReaderClosed
		}
		return nil
	}
}

// answer calls the Model for Stream, reporting to started when the call
// ended, and sends its error, or a last message with the tool calls and
// ResponseMeta, to sw.
func (c *ChatModel) answer(ctx context.Context, req *portico.Request, sw *schema.StreamWriter[*schema.Message], started func(error)) {
	defer sw.Close()
	resp, err := c.m.Generate(ctx, req)
	if err != nil {
		started(err)
		sw.Send(nil, err) // read only when a chunk came first
		return
	}
	started(nil)
	last := message(resp)
	last.Content, last.ReasoningContent = "", "" // the chunks carried them
	sw.Send(last, nil)
}

// errReaderClosed is the OnChunk error that stops a call whose reader was
// closed.
var errReaderClosed = errors.New("eino: stream reader closed")

// request maps an eino call to a Portico request.
func (c *ChatModel) request(ctx context.Context, input []*schema.Message, opts []model.Option) (*portico.Request, error) {
	o := model.GetCommonOptions(nil, opts...)
	req := &portico.Request{Model: deref(o.Model), MaxOutputTokens: deref(o.MaxTokens), Tools: c.tools, Extra: extra(o),
		Identity: portico.IdentityFrom(ctx), Priority: portico.PriorityFrom(ctx)}
	var err error
	if o.Tools != nil {
		if req.Tools, err = toolsOf(o.Tools); err != nil {
			return nil, err
		}
	}
	req.Messages, err = mapAll(input, messageOf)
	if err != nil {
		return nil, err
	}
	return req, nil
}

// deref is *p, or T's zero value when p is nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// mapAll maps each of in with f, stopping at f's first error.
func mapAll[In, Out any](in []In, f func(In) (Out, error)) ([]Out, error) {
	var out []Out
	for _, v := range in {
		o, err := f(v)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// extra is o's sampling options under the OpenAI names the adapters read.
func extra(o *model.Options) map[string]any {
	x := map[string]any{}
	if o.Temperature != nil {
		x["temperature"] = float64(*o.Temperature)
	}
	if o.TopP != nil {
		x["top_p"] = float64(*o.TopP)
	}
	if len(o.Stop) > 0 {
		x["stop"] = o.Stop
	}
	if len(x) == 0 {
		return nil
	}
	return x
}

// refuse is the error of a call Portico cannot carry.
func refuse(format string, args ...any) error {
	return &portico.Error{Class: portico.Permanent, NotSent: true, Reason: "eino", Err: errorf(format, args...)}
}

// roles maps eino's roles to Portico's.
var roles = map[schema.RoleType]portico.Role{
	schema.System: portico.RoleSystem, schema.User: portico.RoleUser,
	schema.Assistant: portico.RoleAssistant, schema.Tool: portico.RoleTool,
}

// messageOf maps one eino message to Portico's.
func messageOf(m *schema.Message) (portico.Message, error) {
	role, ok := roles[m.Role]
	if !ok {
		return portico.Message{}, refuse("message role %q", m.Role)
	}
	content, err := contentOf(m)
	if err != nil {
		return portico.Message{}, err
	}
	return portico.Message{Role: role, ToolCallID: m.ToolCallID, Content: content, ToolCalls: toolCallsOf(m.ToolCalls)}, nil
}

// contentOf maps m's Content, MultiContent and UserInputMultiContent to
// Portico's parts, in that order.
func contentOf(m *schema.Message) ([]portico.Part, error) {
	var out []portico.Part
	if m.Content != "" {
		out = append(out, portico.Part{Kind: portico.PartText, Text: m.Content})
	}
	multi, err := mapAll(m.MultiContent, multiPart)
	if err != nil {
		return nil, err
	}
	input, err := mapAll(m.UserInputMultiContent, inputPart)
	if err != nil {
		return nil, err
	}
	return slices.Concat(out, multi, input), nil
}

// multiPart maps a text or image part of a message's MultiContent.
//
//lint:ignore SA1019 eino deprecated MultiContent, but callers still send it.
func multiPart(p schema.ChatMessagePart) (portico.Part, error) {
	switch {
	case p.Type == schema.ChatMessagePartTypeText:
		return portico.Part{Kind: portico.PartText, Text: p.Text}, nil
	case p.Type == schema.ChatMessagePartTypeImageURL && p.ImageURL != nil:
		return portico.Part{Kind: portico.PartImage, ImageURL: p.ImageURL.URL}, nil
	}
	return portico.Part{}, refuse("message part of type %q", p.Type)
}

// inputPart maps a text or image part of a user's message.
func inputPart(p schema.MessageInputPart) (portico.Part, error) {
	switch p.Type {
	case schema.ChatMessagePartTypeText:
		return portico.Part{Kind: portico.PartText, Text: p.Text}, nil
	case schema.ChatMessagePartTypeImageURL:
		if url, ok := imageURL(p.Image); ok {
			return portico.Part{Kind: portico.PartImage, ImageURL: url}, nil
		}
	}
	return portico.Part{}, refuse("user input part of type %q", p.Type)
}

// imageURL is img's URL, or its data as a data: URL; false when img has
// neither.
func imageURL(img *schema.MessageInputImage) (string, bool) {
	switch {
	case img == nil:
		return "", false
	case img.URL != nil:
		return *img.URL, true
	case img.Base64Data != nil:
		return "data:" + img.MIMEType + ";base64," + *img.Base64Data, true
	}
	return "", false
}

// toolsOf maps eino's tools to Portico's, their parameters as JSON Schema.
func toolsOf(tools []*schema.ToolInfo) ([]portico.Tool, error) {
	out := make([]portico.Tool, 0, len(tools))
	for _, t := range tools {
		params, err := paramsOf(t)
		if err != nil {
			return nil, err
		}
		out = append(out, portico.Tool{Name: t.Name, Description: t.Desc, Parameters: params})
	}
	return out, nil
}

// paramsOf is t's parameters as JSON Schema; an empty object's schema when
// it has none.
func paramsOf(t *schema.ToolInfo) (json.RawMessage, error) {
	s, err := t.ToJSONSchema()
	if err != nil {
		return nil, refuse("tool %q: %v", t.Name, err)
	}
	if s == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	params, err := json.Marshal(s)
	if err != nil {
		return nil, refuse("tool %q: %v", t.Name, err)
	}
	return params, nil
}

// message maps a Portico answer to an eino assistant message.
func message(r *portico.Response) *schema.Message {
	m := &schema.Message{Role: schema.Assistant, Content: r.Text, ReasoningContent: r.ReasoningText(),
		ResponseMeta: &schema.ResponseMeta{FinishReason: string(r.FinishReason), Usage: &schema.TokenUsage{
			PromptTokens: r.Usage.InputTokens, CompletionTokens: r.Usage.OutputTokens,
			TotalTokens:             r.Usage.InputTokens + r.Usage.OutputTokens,
			PromptTokenDetails:      schema.PromptTokenDetails{CachedTokens: r.Usage.CachedInputTokens},
			CompletionTokensDetails: schema.CompletionTokensDetails{ReasoningTokens: r.Usage.ReasoningTokens},
		}}}
	for i, tc := range r.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, schema.ToolCall{Index: &i, ID: tc.ID, Type: "function",
			Function: schema.FunctionCall{Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	return m
}
