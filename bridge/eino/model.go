package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/portico-llm/portico"
)

// Model is an eino chat model as a Portico Model. The zero value is not
// usable: set Chat. It is safe for concurrent use if Chat is.
type Model struct {
	// Chat answers every call. A ToolCallingChatModel is given the request's
	// tools with WithTools; a BaseChatModel gets them as a call option.
	Chat model.BaseChatModel
	// Name is the model reported in Response.Model and errors. Like
	// Portico's adapters, Model does not send Request.Model on: Chat calls
	// the model it was built for.
	Name string
	// Classify, when not nil, classifies the errors of Chat that are not
	// already *portico.Error and not the context's; nil leaves them
	// Permanent.
	Classify func(error) portico.Class
}

var _ portico.Model = (*Model)(nil)

// New returns chat as a Portico Model named name.
func New(chat model.BaseChatModel, name string) *Model { return &Model{Chat: chat, Name: name} }

// Generate sends req to m.Chat, streaming when req does; an error is a
// classified *portico.Error.
func (m *Model) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	chat, opts, err := m.prepare(req)
	if err != nil {
		return nil, err
	}
	input := make([]*schema.Message, 0, len(req.Messages))
	for _, msg := range req.Messages {
		input = append(input, messageFor(msg))
	}
	var out *schema.Message
	if req.OnChunk != nil {
		out, err = m.stream(ctx, chat, input, opts, req.OnChunk)
	} else {
		out, err = chat.Generate(ctx, input, opts...)
	}
	if err != nil {
		return nil, m.classify(ctx, err)
	}
	if out == nil {
		return nil, &portico.Error{Class: portico.InvalidResponse, Model: m.Name, Reason: "no message", Err: errors.New("eino: a nil answer")}
	}
	return m.response(out), nil
}

// prepare returns the chat model to call with req's tools bound, and the
// options for the rest of req.
func (m *Model) prepare(req *portico.Request) (model.BaseChatModel, []model.Option, error) {
	var opts []model.Option
	if req.MaxOutputTokens > 0 {
		opts = append(opts, model.WithMaxTokens(req.MaxOutputTokens))
	}
	if v, ok := req.Extra["temperature"].(float64); ok {
		opts = append(opts, model.WithTemperature(float32(v)))
	}
	if v, ok := req.Extra["top_p"].(float64); ok {
		opts = append(opts, model.WithTopP(float32(v)))
	}
	if v, ok := req.Extra["stop"].([]string); ok {
		opts = append(opts, model.WithStop(v))
	}
	if len(req.Tools) == 0 {
		return m.Chat, opts, nil
	}
	tools := make([]*schema.ToolInfo, 0, len(req.Tools))
	for _, t := range req.Tools {
		info := &schema.ToolInfo{Name: t.Name, Desc: t.Description}
		if len(t.Parameters) > 0 {
			s := new(jsonschema.Schema)
			if err := json.Unmarshal(t.Parameters, s); err != nil {
				return nil, nil, &portico.Error{Class: portico.Permanent, NotSent: true, Model: m.Name, Err: fmt.Errorf("eino: tool %q: %w", t.Name, err)}
			}
			info.ParamsOneOf = schema.NewParamsOneOfByJSONSchema(s)
		}
		tools = append(tools, info)
	}
	if tc, ok := m.Chat.(model.ToolCallingChatModel); ok {
		bound, err := tc.WithTools(tools)
		if err != nil {
			return nil, nil, &portico.Error{Class: portico.Incompatible, NotSent: true, Model: m.Name, Err: err}
		}
		return bound, opts, nil
	}
	return m.Chat, append(opts, model.WithTools(tools)), nil
}

// stream calls chat.Stream, passing each message's text on to onChunk, and
// returns the messages concatenated.
func (m *Model) stream(ctx context.Context, chat model.BaseChatModel, input []*schema.Message, opts []model.Option, onChunk func(portico.Chunk) error) (*schema.Message, error) {
	sr, err := chat.Stream(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	var msgs []*schema.Message
	for {
		msg, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, msg)
		if msg.Content != "" {
			if err := onChunk(portico.Chunk{Text: msg.Content}); err != nil {
				return nil, err
			}
		}
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	return schema.ConcatMessages(msgs)
}

// classify classifies an error of m.Chat.
func (m *Model) classify(ctx context.Context, err error) error {
	var pe *portico.Error
	if errors.As(err, &pe) {
		return err
	}
	if cerr := portico.FromContext(ctx); cerr != nil {
		return portico.Join(cerr, err)
	}
	class := portico.Permanent
	if m.Classify != nil {
		class = m.Classify(err)
	}
	return &portico.Error{Class: class, Model: m.Name, Err: err}
}

// roleTypes maps Portico's roles to eino's.
var roleTypes = map[portico.Role]schema.RoleType{
	portico.RoleSystem: schema.System, portico.RoleUser: schema.User,
	portico.RoleAssistant: schema.Assistant, portico.RoleTool: schema.Tool,
}

// messageFor maps one Portico message to eino's.
func messageFor(msg portico.Message) *schema.Message {
	out := &schema.Message{Role: roleTypes[msg.Role], ToolCallID: msg.ToolCallID}
	var text []string
	images := false
	for _, p := range msg.Content {
		if p.Kind == portico.PartImage {
			images = true
		}
		text = append(text, p.Text)
	}
	if !images {
		out.Content = strings.Join(text, "")
	}
	for _, p := range msg.Content {
		if !images {
			break
		}
		switch p.Kind {
		case portico.PartText:
			out.UserInputMultiContent = append(out.UserInputMultiContent, schema.MessageInputPart{Type: schema.ChatMessagePartTypeText, Text: p.Text})
		case portico.PartImage:
			url := p.ImageURL
			out.UserInputMultiContent = append(out.UserInputMultiContent, schema.MessageInputPart{Type: schema.ChatMessagePartTypeImageURL,
				Image: &schema.MessageInputImage{MessagePartCommon: schema.MessagePartCommon{URL: &url}}})
		}
	}
	for _, tc := range msg.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, schema.ToolCall{ID: tc.ID, Type: "function", Function: schema.FunctionCall{Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	return out
}

// response maps eino's answer to Portico's.
func (m *Model) response(out *schema.Message) *portico.Response {
	r := &portico.Response{Text: out.Content, Model: m.Name, FinishReason: portico.FinishStop}
	if out.ReasoningContent != "" {
		r.Thoughts = []portico.Thought{{Text: out.ReasoningContent}}
	}
	for _, tc := range out.ToolCalls {
		r.ToolCalls = append(r.ToolCalls, portico.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	if meta := out.ResponseMeta; meta != nil {
		switch meta.FinishReason {
		case "length", "max_tokens":
			r.FinishReason = portico.FinishLength
		case "content_filter":
			r.FinishReason = portico.FinishContentFilter
		}
		if u := meta.Usage; u != nil {
			r.Usage = portico.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
				CachedInputTokens: u.PromptTokenDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens}
		}
	}
	if len(r.ToolCalls) > 0 {
		r.FinishReason = portico.FinishToolCalls
	}
	return r
}
