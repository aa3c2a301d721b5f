package eino

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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
	out, err := m.call(ctx, chat, messagesFor(req.Messages), opts, req.OnChunk)
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
	opts := options(req)
	if len(req.Tools) == 0 {
		return m.Chat, opts, nil
	}
	tools, err := m.toolInfos(req.Tools)
	if err != nil {
		return nil, nil, err
	}
	tc, ok := m.Chat.(model.ToolCallingChatModel)
	if !ok {
		return m.Chat, append(opts, model.WithTools(tools)), nil
	}
	bound, err := tc.WithTools(tools)
	if err != nil {
		return nil, nil, &portico.Error{Class: portico.Incompatible, NotSent: true, Model: m.Name, Err: err}
	}
	return bound, opts, nil
}

// options maps req's MaxOutputTokens and Extra sampling options to eino's.
func options(req *portico.Request) []model.Option {
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
	return opts
}

// toolInfos maps Portico's tools to eino's; parameters that are not a
// JSON Schema are a Permanent *portico.Error.
func (m *Model) toolInfos(tools []portico.Tool) ([]*schema.ToolInfo, error) {
	out := make([]*schema.ToolInfo, 0, len(tools))
	for _, t := range tools {
		params, err := paramsOneOf(t)
		if err != nil {
			return nil, &portico.Error{Class: portico.Permanent, NotSent: true, Model: m.Name, Err: fmt.Errorf("eino: tool %q: %w", t.Name, err)}
		}
		out = append(out, &schema.ToolInfo{Name: t.Name, Desc: t.Description, ParamsOneOf: params})
	}
	return out, nil
}

// paramsOneOf parses t's parameters as JSON Schema; nil when it has none.
func paramsOneOf(t portico.Tool) (*schema.ParamsOneOf, error) {
	if len(t.Parameters) == 0 {
		return nil, nil
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(t.Parameters, s); err != nil {
		return nil, err
	}
	return schema.NewParamsOneOfByJSONSchema(s), nil
}

// call calls chat, streaming to onChunk when it is not nil.
func (m *Model) call(ctx context.Context, chat model.BaseChatModel, input []*schema.Message, opts []model.Option, onChunk func(portico.Chunk) error) (*schema.Message, error) {
	if onChunk != nil {
		return m.stream(ctx, chat, input, opts, onChunk)
	}
	return chat.Generate(ctx, input, opts...)
}

// stream calls chat.Stream, passing each message's text on to onChunk, and
// returns the messages concatenated.
func (m *Model) stream(ctx context.Context, chat model.BaseChatModel, input []*schema.Message, opts []model.Option, onChunk func(portico.Chunk) error) (*schema.Message, error) {
	sr, err := chat.Stream(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	msgs, err := collect(sr, onChunk)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	return schema.ConcatMessages(msgs)
}

// collect reads sr to its end, passing each message's text on to onChunk.
func collect(sr *schema.StreamReader[*schema.Message], onChunk func(portico.Chunk) error) ([]*schema.Message, error) {
	var msgs []*schema.Message
	for {
		msg, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return msgs, nil
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, msg)
		if err := sendText(msg, onChunk); err != nil {
			return nil, err
		}
	}
}

// sendText passes msg's text to onChunk, if it has any.
func sendText(msg *schema.Message, onChunk func(portico.Chunk) error) error {
	if msg.Content == "" {
		return nil
	}
	return onChunk(portico.Chunk{Text: msg.Content})
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
	return &portico.Error{Class: m.classOf(err), Model: m.Name, Err: err}
}

// classOf is err's class by m.Classify; Permanent without one.
func (m *Model) classOf(err error) portico.Class {
	if m.Classify == nil {
		return portico.Permanent
	}
	return m.Classify(err)
}

// roleTypes maps Portico's roles to eino's.
var roleTypes = map[portico.Role]schema.RoleType{
	portico.RoleSystem: schema.System, portico.RoleUser: schema.User,
	portico.RoleAssistant: schema.Assistant, portico.RoleTool: schema.Tool,
}

// messagesFor maps Portico's messages to eino's.
func messagesFor(msgs []portico.Message) []*schema.Message {
	out := make([]*schema.Message, 0, len(msgs))
	for _, msg := range msgs {
		out = append(out, messageFor(msg))
	}
	return out
}

// messageFor maps one Portico message to eino's: its text as Content, or,
// when it has an image, its parts as UserInputMultiContent.
func messageFor(msg portico.Message) *schema.Message {
	out := &schema.Message{Role: roleTypes[msg.Role], ToolCallID: msg.ToolCallID}
	if slices.ContainsFunc(msg.Content, func(p portico.Part) bool { return p.Kind == portico.PartImage }) {
		out.UserInputMultiContent = inputParts(msg.Content)
	} else {
		out.Content = textOf(msg.Content)
	}
	for _, tc := range msg.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, schema.ToolCall{ID: tc.ID, Type: "function", Function: schema.FunctionCall{Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	return out
}

// textOf is the text of parts, concatenated.
func textOf(parts []portico.Part) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// inputParts maps the text and image parts to eino's.
func inputParts(parts []portico.Part) []schema.MessageInputPart {
	var out []schema.MessageInputPart
	for _, p := range parts {
		switch p.Kind {
		case portico.PartText:
			out = append(out, schema.MessageInputPart{Type: schema.ChatMessagePartTypeText, Text: p.Text})
		case portico.PartImage:
			url := p.ImageURL
			out = append(out, schema.MessageInputPart{Type: schema.ChatMessagePartTypeImageURL,
				Image: &schema.MessageInputImage{MessagePartCommon: schema.MessagePartCommon{URL: &url}}})
		}
	}
	return out
}

// finishes maps the finish reasons eino reports that are not FinishStop.
var finishes = map[string]portico.FinishReason{
	"length": portico.FinishLength, "max_tokens": portico.FinishLength, "content_filter": portico.FinishContentFilter,
}

// response maps eino's answer to Portico's.
func (m *Model) response(out *schema.Message) *portico.Response {
	r := &portico.Response{Text: out.Content, Model: m.Name, FinishReason: portico.FinishStop, ToolCalls: toolCallsOf(out.ToolCalls)}
	if out.ReasoningContent != "" {
		r.Thoughts = []portico.Thought{{Text: out.ReasoningContent}}
	}
	if meta := out.ResponseMeta; meta != nil {
		r.FinishReason = cmp.Or(finishes[meta.FinishReason], portico.FinishStop)
		r.Usage = usageOf(meta.Usage)
	}
	if len(r.ToolCalls) > 0 {
		r.FinishReason = portico.FinishToolCalls
	}
	return r
}

// usageOf maps eino's token counts; nil counts none.
func usageOf(u *schema.TokenUsage) portico.Usage {
	if u == nil {
		return portico.Usage{}
	}
	return portico.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
		CachedInputTokens: u.PromptTokenDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens}
}

// toolCallsOf maps eino's tool calls to Portico's.
func toolCallsOf(calls []schema.ToolCall) []portico.ToolCall {
	var out []portico.ToolCall
	for _, tc := range calls {
		out = append(out, portico.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	return out
}
