package eino

import (
	"context"
	"encoding/json"
	"errors"
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
	req.OnChunk = func(ch portico.Chunk) error {
		started(nil)
		msg := &schema.Message{Role: schema.Assistant, Content: ch.Text, ReasoningContent: ch.Reasoning}
		if sw.Send(msg, nil) {
			return errReaderClosed
		}
		return nil
	}
	go func() {
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
	}()
	if err := <-first; err != nil {
		sr.Close()
		return nil, err
	}
	return sr, nil
}

// errReaderClosed is the OnChunk error that stops a call whose reader was
// closed.
var errReaderClosed = errors.New("eino: stream reader closed")

// request maps an eino call to a Portico request.
func (c *ChatModel) request(ctx context.Context, input []*schema.Message, opts []model.Option) (*portico.Request, error) {
	o := model.GetCommonOptions(nil, opts...)
	req := &portico.Request{Tools: c.tools, Extra: extra(o)}
	req.Identity, req.Priority = portico.IdentityFrom(ctx), portico.PriorityFrom(ctx)
	if o.MaxTokens != nil {
		req.MaxOutputTokens = *o.MaxTokens
	}
	if o.Model != nil {
		req.Model = *o.Model
	}
	if o.Tools != nil {
		tools, err := toolsOf(o.Tools)
		if err != nil {
			return nil, err
		}
		req.Tools = tools
	}
	for _, m := range input {
		msg, err := messageOf(m)
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
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
	out := portico.Message{Role: role, ToolCallID: m.ToolCallID}
	if m.Content != "" {
		out.Content = append(out.Content, portico.Part{Kind: portico.PartText, Text: m.Content})
	}
	for _, p := range m.MultiContent {
		switch {
		case p.Type == schema.ChatMessagePartTypeText:
			out.Content = append(out.Content, portico.Part{Kind: portico.PartText, Text: p.Text})
		case p.Type == schema.ChatMessagePartTypeImageURL && p.ImageURL != nil:
			out.Content = append(out.Content, portico.Part{Kind: portico.PartImage, ImageURL: p.ImageURL.URL})
		default:
			return portico.Message{}, refuse("message part of type %q", p.Type)
		}
	}
	for _, p := range m.UserInputMultiContent {
		part, err := inputPart(p)
		if err != nil {
			return portico.Message{}, err
		}
		out.Content = append(out.Content, part)
	}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, portico.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	return out, nil
}

// inputPart maps a text or image part of a user's message.
func inputPart(p schema.MessageInputPart) (portico.Part, error) {
	switch {
	case p.Type == schema.ChatMessagePartTypeText:
		return portico.Part{Kind: portico.PartText, Text: p.Text}, nil
	case p.Type == schema.ChatMessagePartTypeImageURL && p.Image != nil && p.Image.URL != nil:
		return portico.Part{Kind: portico.PartImage, ImageURL: *p.Image.URL}, nil
	case p.Type == schema.ChatMessagePartTypeImageURL && p.Image != nil && p.Image.Base64Data != nil:
		return portico.Part{Kind: portico.PartImage, ImageURL: "data:" + p.Image.MIMEType + ";base64," + *p.Image.Base64Data}, nil
	}
	return portico.Part{}, refuse("user input part of type %q", p.Type)
}

// toolsOf maps eino's tools to Portico's, their parameters as JSON Schema.
func toolsOf(tools []*schema.ToolInfo) ([]portico.Tool, error) {
	out := make([]portico.Tool, 0, len(tools))
	for _, t := range tools {
		params := json.RawMessage(`{"type":"object","properties":{}}`)
		if t.ParamsOneOf != nil {
			s, err := t.ToJSONSchema()
			if err != nil {
				return nil, refuse("tool %q: %v", t.Name, err)
			}
			if s != nil {
				if params, err = json.Marshal(s); err != nil {
					return nil, refuse("tool %q: %v", t.Name, err)
				}
			}
		}
		out = append(out, portico.Tool{Name: t.Name, Description: t.Desc, Parameters: params})
	}
	return out, nil
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
