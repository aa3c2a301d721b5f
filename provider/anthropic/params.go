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
// (output_config.format), MaxOutputTokens max_tokens (the default grown by
// a reasoning budget), Reasoning thinking. Extra keys the adapter
// types go into their fields; every other key is set on the JSON body as it
// is.
func (m *Model) params(req *portico.Request, model string) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: int64(req.OutputBound(m.maxTokens))}
	if err := messages(&p, req.Messages); err != nil {
		return p, err
	}
	if err := thinking(&p, req); err != nil {
		return p, err
	}
	if err := tools(&p, req.Tools); err != nil {
		return p, err
	}
	if err := outputFormat(&p, req.Schema); err != nil {
		return p, err
	}
	return p, extras(&p, req)
}

// messages encodes the conversation: system text into the system prompt,
// the others into turns (a run of tool results into one user turn).
func messages(p *sdk.MessageNewParams, msgs []portico.Message) error {
	p.Messages = make([]sdk.MessageParam, 0, len(msgs))
	for i := range msgs {
		if err := message(p, &msgs[i], i > 0 && msgs[i-1].Role == portico.RoleTool); err != nil {
			return fmt.Errorf("anthropic: message %d: %w", i, err)
		}
	}
	return nil
}

// message adds msg to p. A tool result joins the turn of the result before
// it (afterResult): the API asks for parallel calls' results in one turn.
func message(p *sdk.MessageNewParams, msg *portico.Message, afterResult bool) error {
	var err error
	turn := sdk.MessageParam{OfUser: &sdk.UserMessageParam{}}
	switch msg.Role {
	case portico.RoleSystem:
		return system(p, msg.Content, msg.Cache)
	case portico.RoleUser:
		turn.OfUser.Content, err = userBlocks(msg.Content)
	case portico.RoleAssistant:
		turn = sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{}}
		turn.OfAssistant.Content, err = assistantBlocks(msg)
	case portico.RoleTool:
		block, rerr := toolResult(msg)
		if n := len(p.Messages); rerr == nil && n > 0 && afterResult {
			p.Messages[n-1].OfUser.Content = append(p.Messages[n-1].OfUser.Content, block)
			markLast(p.Messages[n-1].OfUser.Content, msg.Cache)
			return nil
		}
		turn.OfUser.Content, err = []sdk.ContentBlockParamUnion{block}, rerr
	default:
		return fmt.Errorf("unknown role %q", msg.Role)
	}
	if turn.OfAssistant != nil {
		markLast(turn.OfAssistant.Content, msg.Cache)
	} else {
		markLast(turn.OfUser.Content, msg.Cache)
	}
	p.Messages = append(p.Messages, turn)
	return err
}

// system adds a system message's text to the system prompt, its
// breakpoint (cache) on the last block.
func system(p *sdk.MessageNewParams, parts []portico.Part, cache portico.CacheTTL) error {
	for _, part := range parts {
		if part.Kind != portico.PartText {
			return fmt.Errorf("%v part in a system message", part.Kind)
		}
		if part.Text != "" {
			p.System = append(p.System, sdk.TextBlockParam{Text: part.Text, CacheControl: cacheControl(part.Cache)})
		}
	}
	if n := len(p.System); n > 0 && cache != portico.NoCache {
		p.System[n-1].CacheControl = cacheControl(cache)
	}
	return nil
}

// tools encodes the client tools; a tool without parameters takes an object.
func tools(p *sdk.MessageNewParams, ts []portico.Tool) error {
	for _, t := range ts {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		} else if !isJSONObject(schema) {
			return fmt.Errorf("anthropic: tool %q: parameters are not a JSON object", t.Name)
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: param.Override[sdk.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	return nil
}

// outputFormat encodes a response schema as output_config.format.
func outputFormat(p *sdk.MessageNewParams, s *portico.Schema) error {
	if s == nil {
		return nil
	}
	if !isJSONObject(s.JSON) {
		return errors.New("anthropic: response schema is not a JSON object")
	}
	format := make([]byte, 0, len(s.JSON)+32)
	format = append(format, `{"type":"json_schema","schema":`...)
	format = append(format, s.JSON...)
	format = append(format, '}')
	p.OutputConfig.Format = param.Override[sdk.JSONOutputFormatParam](json.RawMessage(format))
	return nil
}

// extras sets req's Extra keys: those setExtra types into their fields, the
// others on the JSON body as they are. It refuses the keys the adapter sets.
func extras(p *sdk.MessageNewParams, req *portico.Request) error {
	if _, stop := req.Extra["stop"]; stop {
		if _, seqs := req.Extra["stop_sequences"]; seqs {
			return errors.New(`anthropic: Extra keys "stop" and "stop_sequences" both set`)
		}
	}
	var body map[string]any
	for k, v := range req.Extra {
		switch {
		case adapterKeys[k]:
			return fmt.Errorf("anthropic: Extra key %q is the adapter's to set", k)
		case k == "output_config" && req.Schema != nil:
			return errors.New(`anthropic: Extra key "output_config" with a Schema: the adapter sets output_config.format`)
		case setExtra(p, k, v):
			continue
		case !adapt.Encodable(v):
			return fmt.Errorf("anthropic: Extra key %q: value is not JSON", k)
		}
		if body == nil {
			body = make(map[string]any, len(req.Extra))
		}
		body[k] = v
	}
	if body != nil {
		p.SetExtraFields(body)
	}
	return nil
}

// adapterKeys are the body keys the adapter sets, refused in Extra.
var adapterKeys = map[string]bool{"model": true, "messages": true, "system": true, "stream": true, "max_tokens": true, "tools": true}

// isJSONObject reports whether raw is valid JSON whose value is an object.
func isJSONObject(raw json.RawMessage) bool {
	s := strings.TrimLeft(string(raw), " \t\r\n")
	return strings.HasPrefix(s, "{") && json.Valid(raw)
}

// userBlocks encodes a user message's text, image and document parts.
func userBlocks(parts []portico.Part) ([]sdk.ContentBlockParamUnion, error) {
	return appendParts(make([]sdk.ContentBlockParamUnion, 0, len(parts)), parts,
		func(t *sdk.TextBlockParam) sdk.ContentBlockParamUnion { return sdk.ContentBlockParamUnion{OfText: t} },
		func(i *sdk.ImageBlockParam) sdk.ContentBlockParamUnion { return sdk.ContentBlockParamUnion{OfImage: i} },
		func(d *sdk.DocumentBlockParam) sdk.ContentBlockParamUnion {
			return sdk.ContentBlockParamUnion{OfDocument: d}
		})
}

// appendParts appends text, image and document parts to blocks as text,
// image and document make them. Empty text parts are left out: the API
// refuses empty text blocks.
func appendParts[B any](blocks []B, parts []portico.Part, text func(*sdk.TextBlockParam) B, image func(*sdk.ImageBlockParam) B, document func(*sdk.DocumentBlockParam) B) ([]B, error) {
	for _, part := range parts {
		switch part.Kind {
		case portico.PartText:
			if part.Text != "" {
				blocks = append(blocks, text(&sdk.TextBlockParam{Text: part.Text, CacheControl: cacheControl(part.Cache)}))
			}
		case portico.PartImage:
			img, err := imageBlock(part.ImageURL)
			if err != nil {
				return nil, err
			}
			img.CacheControl = cacheControl(part.Cache)
			blocks = append(blocks, image(img))
		case portico.PartDocument:
			if part.Media == nil {
				return nil, errors.New("document part without Media")
			}
			d := documentBlock(part.Media)
			d.CacheControl = cacheControl(part.Cache)
			blocks = append(blocks, document(d))
		default:
			return nil, fmt.Errorf("unknown part kind %v", part.Kind)
		}
	}
	return blocks, nil
}

// imageBlock encodes an image URL: a data: URL as a base64 source (its media type
// and data), any other URL as a URL source the API fetches.
func imageBlock(url string) (*sdk.ImageBlockParam, error) {
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

// assistantBlocks encodes an earlier answer: its thinking blocks, its text,
// then its tool calls as tool_use blocks whose input is the call's
// arguments as sent.
func assistantBlocks(msg *portico.Message) ([]sdk.ContentBlockParamUnion, error) {
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(msg.Thoughts)+len(msg.Content)+len(msg.ToolCalls))
	blocks = thoughtBlocks(blocks, msg)
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
// ToolCallID, with its text, image and document parts.
func toolResult(msg *portico.Message) (sdk.ContentBlockParamUnion, error) {
	if msg.ToolCallID == "" {
		return sdk.ContentBlockParamUnion{}, errors.New("tool message without a ToolCallID")
	}
	r := &sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
	var err error
	r.Content, err = appendParts(nil, msg.Content,
		func(t *sdk.TextBlockParam) sdk.ToolResultBlockParamContentUnion {
			return sdk.ToolResultBlockParamContentUnion{OfText: t}
		},
		func(i *sdk.ImageBlockParam) sdk.ToolResultBlockParamContentUnion {
			return sdk.ToolResultBlockParamContentUnion{OfImage: i}
		},
		func(d *sdk.DocumentBlockParam) sdk.ToolResultBlockParamContentUnion {
			return sdk.ToolResultBlockParamContentUnion{OfDocument: d}
		})
	return sdk.ContentBlockParamUnion{OfToolResult: r}, err
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
		m, _ := v.(map[string]any)
		id, ok := m["user_id"].(string)
		if !ok || len(m) != 1 {
			return false
		}
		p.Metadata.UserID = sdk.String(id)
		return true
	case "cache_control": // {"type":"ephemeral"} and an optional string "ttl"
		m, _ := v.(map[string]any)
		ttl, hasTTL := m["ttl"]
		s, isString := ttl.(string)
		if m["type"] != "ephemeral" || hasTTL != isString || hasTTL != (len(m) == 2) || len(m) > 2 {
			return false
		}
		p.CacheControl = sdk.NewCacheControlEphemeralParam()
		p.CacheControl.TTL = sdk.CacheControlEphemeralTTL(s)
		return true
	}
	return false
}
