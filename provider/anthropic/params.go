package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// params encodes req for the SDK: system messages become the top-level
// system prompt, the others user and assistant turns (a run of tool results
// one user turn), tools client tools, Request.Schema the JSON output format
// (output_config.format), MaxOutputTokens max_tokens. Extra keys the adapter
// types go into their fields; every other key is set on the JSON body as it
// is.
func (m *Model) params(req *portico.Request, model string) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: int64(req.MaxOutputTokens)}
	if p.MaxTokens == 0 {
		p.MaxTokens = int64(m.maxTokens)
	}
	p.Messages = make([]sdk.MessageParam, 0, len(req.Messages))
	for i := range req.Messages {
		msg := &req.Messages[i]
		switch msg.Role {
		case portico.RoleSystem:
			for _, part := range msg.Content {
				if part.Kind != portico.PartText {
					return p, fmt.Errorf("anthropic: message %d: %v part in a system message", i, part.Kind)
				}
				if part.Text != "" {
					p.System = append(p.System, sdk.TextBlockParam{Text: part.Text})
				}
			}
		case portico.RoleUser:
			blocks, err := userBlocks(msg.Content)
			if err != nil {
				return p, fmt.Errorf("anthropic: message %d: %w", i, err)
			}
			p.Messages = append(p.Messages, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}})
		case portico.RoleAssistant:
			blocks, err := assistantBlocks(msg)
			if err != nil {
				return p, fmt.Errorf("anthropic: message %d: %w", i, err)
			}
			p.Messages = append(p.Messages, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
		case portico.RoleTool:
			block, err := toolResult(msg)
			if err != nil {
				return p, fmt.Errorf("anthropic: message %d: %w", i, err)
			}
			// The results of parallel tool calls go in one user turn, as the
			// API asks; a turn of results begins with a result.
			if n := len(p.Messages); n > 0 && i > 0 && req.Messages[i-1].Role == portico.RoleTool {
				u := p.Messages[n-1].OfUser
				u.Content = append(u.Content, block)
				continue
			}
			p.Messages = append(p.Messages, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: []sdk.ContentBlockParamUnion{block}}})
		default:
			return p, fmt.Errorf("anthropic: message %d: unknown role %q", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		} else if !isJSONObject(schema) {
			return p, fmt.Errorf("anthropic: tool %q: parameters are not a JSON object", t.Name)
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: param.Override[sdk.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	if s := req.Schema; s != nil {
		if !isJSONObject(s.JSON) {
			return p, errors.New("anthropic: response schema is not a JSON object")
		}
		format := make([]byte, 0, len(s.JSON)+32)
		format = append(format, `{"type":"json_schema","schema":`...)
		format = append(format, s.JSON...)
		format = append(format, '}')
		p.OutputConfig.Format = param.Override[sdk.JSONOutputFormatParam](json.RawMessage(format))
	}
	var extras map[string]any
	if _, stop := req.Extra["stop"]; stop {
		if _, seqs := req.Extra["stop_sequences"]; seqs {
			return p, errors.New(`anthropic: Extra keys "stop" and "stop_sequences" both set`)
		}
	}
	for k, v := range req.Extra {
		switch k {
		case "model", "messages", "system", "stream", "max_tokens", "tools":
			return p, fmt.Errorf("anthropic: Extra key %q is the adapter's to set", k)
		case "output_config":
			if req.Schema != nil {
				return p, errors.New(`anthropic: Extra key "output_config" with a Schema: the adapter sets output_config.format`)
			}
		}
		if setExtra(&p, k, v) {
			continue
		}
		if !adapt.Encodable(v) {
			return p, fmt.Errorf("anthropic: Extra key %q: value is not JSON", k)
		}
		if extras == nil {
			extras = make(map[string]any, len(req.Extra))
		}
		extras[k] = v
	}
	if extras != nil {
		p.SetExtraFields(extras)
	}
	return p, nil
}

// isJSONObject reports whether raw is valid JSON whose value is an object.
func isJSONObject(raw json.RawMessage) bool {
	s := strings.TrimLeft(string(raw), " \t\r\n")
	return strings.HasPrefix(s, "{") && json.Valid(raw)
}

// userBlocks encodes a user message's parts. Empty text parts are left out:
// the API refuses empty text blocks.
func userBlocks(parts []portico.Part) ([]sdk.ContentBlockParamUnion, error) {
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(parts))
	for _, part := range parts {
		switch part.Kind {
		case portico.PartText:
			if part.Text != "" {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: part.Text}})
			}
		case portico.PartImage:
			img, err := image(part.ImageURL)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfImage: img})
		default:
			return nil, fmt.Errorf("unknown part kind %v", part.Kind)
		}
	}
	return blocks, nil
}

// image encodes an image URL: a data: URL as a base64 source (its media type
// and data), any other URL as a URL source the API fetches.
func image(url string) (*sdk.ImageBlockParam, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfURL: &sdk.URLImageSourceParam{URL: url}}}, nil
	}
	meta, data, ok := strings.Cut(rest, ",")
	mediaType, base64, _ := strings.Cut(meta, ";")
	if !ok || base64 != "base64" || mediaType == "" {
		return nil, errors.New("image data: URL is not data:<media type>;base64,<data>")
	}
	return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
		Data: data, MediaType: sdk.Base64ImageSourceMediaType(mediaType),
	}}}, nil
}

// assistantBlocks encodes an earlier answer: its text, then its tool calls
// as tool_use blocks whose input is the call's arguments as sent.
func assistantBlocks(msg *portico.Message) ([]sdk.ContentBlockParamUnion, error) {
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(msg.Content)+len(msg.ToolCalls))
	for _, part := range msg.Content {
		if part.Kind != portico.PartText {
			return nil, fmt.Errorf("%v part in an assistant message", part.Kind)
		}
		if part.Text != "" {
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: part.Text}})
		}
	}
	for _, tc := range msg.ToolCalls {
		args := tc.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		} else if !isJSONObject(args) {
			return nil, fmt.Errorf("tool call %q: arguments are not a JSON object", tc.ID)
		}
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: tc.ID, Name: tc.Name, Input: args}})
	}
	return blocks, nil
}

// toolResult encodes a tool message as a tool_result block answering its
// ToolCallID, with its text and image parts.
func toolResult(msg *portico.Message) (sdk.ContentBlockParamUnion, error) {
	if msg.ToolCallID == "" {
		return sdk.ContentBlockParamUnion{}, errors.New("tool message without a ToolCallID")
	}
	r := &sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
	for _, part := range msg.Content {
		switch part.Kind {
		case portico.PartText:
			if part.Text != "" {
				r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: part.Text}})
			}
		case portico.PartImage:
			img, err := image(part.ImageURL)
			if err != nil {
				return sdk.ContentBlockParamUnion{}, err
			}
			r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfImage: img})
		default:
			return sdk.ContentBlockParamUnion{}, fmt.Errorf("unknown part kind %v", part.Kind)
		}
	}
	return sdk.ContentBlockParamUnion{OfToolResult: r}, nil
}

// setExtra sets an Extra key the adapter types: stop_sequences (and "stop",
// OpenAI's name, so that one Request reads the same on both), metadata
// {"user_id"} and the top-level cache_control {"type":"ephemeral","ttl"}. It
// reports false for other keys and for values of another shape, which the
// caller passes on as they are.
func setExtra(p *sdk.MessageNewParams, key string, v any) bool {
	switch key {
	case "stop_sequences", "stop":
		seqs, ok := adapt.Strings(v)
		if !ok {
			return false
		}
		p.StopSequences = seqs
		return true
	case "metadata":
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return false
		}
		id, ok := m["user_id"].(string)
		if !ok {
			return false
		}
		p.Metadata.UserID = sdk.String(id)
		return true
	case "cache_control":
		m, ok := v.(map[string]any)
		if !ok || m["type"] != "ephemeral" || len(m) > 2 {
			return false
		}
		cc := sdk.NewCacheControlEphemeralParam()
		if ttl, has := m["ttl"]; has {
			s, ok := ttl.(string)
			if !ok {
				return false
			}
			cc.TTL = sdk.CacheControlEphemeralTTL(s)
		} else if len(m) == 2 {
			return false
		}
		p.CacheControl = cc
		return true
	}
	return false
}
