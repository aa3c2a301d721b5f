package openai

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// params encodes req for the SDK. Request.Extra keys the SDK has fields for
// go into those fields; other keys are set on the JSON body as they are
// (option.WithJSONSet), so provider-specific options pass through. The keys
// model, messages, stream and stream_options are refused: the adapter sets them.
func (m *Model) params(req *portico.Request, model string) (oai.ChatCompletionNewParams, []option.RequestOption, error) {
	p := oai.ChatCompletionNewParams{Model: shared.ChatModel(model)}
	if err := messages(&p, req.Messages); err != nil {
		return p, nil, err
	}
	if err := cmp.Or(tools(&p, req.Tools), chatSchema(&p, req.Schema)); err != nil {
		return p, nil, err
	}
	if n := int64(req.MaxOutputTokens); n > 0 {
		field := &p.MaxCompletionTokens
		if m.cfg.LegacyMaxTokens {
			field = &p.MaxTokens
		}
		*field = oai.Int(n)
	}
	if key := req.Identity.CacheKey(); key != "" && req.CacheBreakpoints() > 0 {
		p.PromptCacheKey = oai.String(key) // see the package doc, "Prompt caching"
	}
	opts, err := extras(req.Extra, chatKeys, func(k string, v any) bool { return setExtra(&p, k, v) })
	if err := cmp.Or(err, reasoningEffort(&p, req)); err != nil {
		return p, nil, err
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == portico.RoleAssistant {
		opts = append(opts, m.prefill(len(p.Messages)-1)...)
	}
	return p, opts, nil
}

// messages encodes msgs as p's messages.
func messages(p *oai.ChatCompletionNewParams, msgs []portico.Message) error {
	p.Messages = make([]oai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for i := range msgs {
		msg, err := message(&msgs[i])
		if err != nil {
			return fmt.Errorf("openai: message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, msg)
	}
	return nil
}

// chatSchema sets p's response_format to s as json_schema; a nil s sets
// nothing.
func chatSchema(p *oai.ChatCompletionNewParams, s *portico.Schema) error {
	if s == nil {
		return nil
	}
	if !json.Valid(s.JSON) {
		return errors.New("openai: response schema is not valid JSON")
	}
	p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name:   cmp.Or(s.Name, "response"),
			Strict: oai.Bool(s.Strict),
			Schema: s.JSON,
		},
	}
	return nil
}

// tools declares the request's tools as functions.
func tools(p *oai.ChatCompletionNewParams, ts []portico.Tool) error {
	for _, t := range ts {
		fd := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = oai.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &fd.Parameters); err != nil {
				return fmt.Errorf("openai: tool %q: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(fd))
	}
	return nil
}

// extras returns the options that set extra's keys on the JSON body as
// they are, but those set takes (nil: none). It refuses the keys of
// reserved, which the adapter sets, and values that are not JSON (the SDK
// would send them as they are).
func extras(extra map[string]any, reserved map[string]bool, set func(k string, v any) bool) ([]option.RequestOption, error) {
	var opts []option.RequestOption
	for k, v := range extra {
		switch {
		case reserved[k]:
			return nil, fmt.Errorf("openai: Extra key %q is the adapter's to set", k)
		case set != nil && set(k, v):
		case !adapt.Encodable(v):
			return nil, fmt.Errorf("openai: Extra key %q: value is not JSON", k)
		default:
			opts = append(opts, option.WithJSONSet(jsonKey(k), v))
		}
	}
	return opts, nil
}

// chatKeys and responsesKeys are the body keys each API's adapter sets.
var (
	chatKeys      = map[string]bool{"model": true, "messages": true, "stream": true, "stream_options": true}
	responsesKeys = map[string]bool{"model": true, "input": true, "stream": true}
)

// prefill returns the options that ask the server to continue the last
// message, of index last, in the Config's prefill dialect.
func (m *Model) prefill(last int) []option.RequestOption {
	switch m.cfg.Prefill {
	case PrefillContinueFinalMessage:
		return []option.RequestOption{option.WithJSONSet("continue_final_message", true), option.WithJSONSet("add_generation_prompt", false)}
	case PrefillPrefixFlag:
		return []option.RequestOption{option.WithJSONSet("messages."+strconv.Itoa(last)+".prefix", true)}
	}
	return nil
}

// message encodes one portico message.
func message(msg *portico.Message) (oai.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case portico.RoleSystem:
		text, err := adapt.TextOnly(msg.Content)
		if err != nil {
			return oai.ChatCompletionMessageParamUnion{}, err
		}
		return oai.SystemMessage(text), nil
	case portico.RoleUser:
		return userMessage(msg)
	case portico.RoleAssistant:
		return assistantMessage(msg)
	case portico.RoleTool:
		text, err := adapt.TextOnly(msg.Content)
		if err != nil {
			return oai.ChatCompletionMessageParamUnion{}, err
		}
		return oai.ToolMessage(text, msg.ToolCallID), nil
	}
	return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
}

// userMessage encodes a user message: its text alone as a string, else
// its text, image, document and audio parts.
func userMessage(msg *portico.Message) (oai.ChatCompletionMessageParamUnion, error) {
	if text, err := adapt.TextOnly(msg.Content); err == nil {
		return oai.UserMessage(text), nil
	}
	parts := make([]oai.ChatCompletionContentPartUnionParam, 0, len(msg.Content))
	for _, part := range msg.Content {
		switch part.Kind {
		case portico.PartText:
			parts = append(parts, oai.TextContentPart(part.Text))
		case portico.PartImage:
			parts = append(parts, oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: part.ImageURL}))
		case portico.PartDocument, portico.PartAudio:
			mp, err := mediaPart(&part)
			if err != nil {
				return oai.ChatCompletionMessageParamUnion{}, err
			}
			parts = append(parts, mp)
		default:
			return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown part kind %v", part.Kind)
		}
	}
	return oai.UserMessage(parts), nil
}

// assistantMessage encodes an assistant message: its text (left out when
// empty and it calls tools) and its tool calls.
func assistantMessage(msg *portico.Message) (oai.ChatCompletionMessageParamUnion, error) {
	text, err := adapt.TextOnly(msg.Content)
	if err != nil {
		return oai.ChatCompletionMessageParamUnion{}, err
	}
	var a oai.ChatCompletionAssistantMessageParam
	if text != "" || len(msg.ToolCalls) == 0 {
		a.Content.OfString = oai.String(text)
	}
	for _, tc := range msg.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.ID,
				Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(tc.Arguments)},
			},
		})
	}
	return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
}

// setExtra sets a known sampling option on p; it reports false for keys it
// does not know or values of an unexpected type, which the caller passes on
// as raw JSON.
func setExtra(p *oai.ChatCompletionNewParams, key string, v any) bool {
	field, known := extraFields[key]
	if !known {
		return false
	}
	f, isNum := adapt.Float(v)
	s, isString := v.(string)
	switch ptr := field(p).(type) {
	case *param.Opt[float64]:
		return set(ptr, oai.Float(f), isNum)
	case *param.Opt[int64]:
		return set(ptr, oai.Int(int64(f)), isNum && f == float64(int64(f)))
	case *param.Opt[string]:
		return set(ptr, oai.String(s), isString)
	case *shared.ReasoningEffort:
		return set(ptr, shared.ReasoningEffort(s), isString)
	case *oai.ChatCompletionNewParamsServiceTier:
		return set(ptr, oai.ChatCompletionNewParamsServiceTier(s), isString)
	case *param.Opt[bool]:
		b, ok := v.(bool)
		return set(ptr, oai.Bool(b), ok)
	case *oai.ChatCompletionNewParamsStopUnion:
		ss, isList := v.([]string)
		return set(ptr, oai.ChatCompletionNewParamsStopUnion{OfString: oai.String(s)}, isString) ||
			set(ptr, oai.ChatCompletionNewParamsStopUnion{OfStringArray: ss}, isList)
	}
	return false
}

// set sets *field to x when ok, and reports ok.
func set[T any](field *T, x T, ok bool) bool {
	if ok {
		*field = x
	}
	return ok
}

// extraFields maps each Extra key the SDK has a field for to the field.
var extraFields = map[string]func(p *oai.ChatCompletionNewParams) any{
	"temperature":         func(p *oai.ChatCompletionNewParams) any { return &p.Temperature },
	"top_p":               func(p *oai.ChatCompletionNewParams) any { return &p.TopP },
	"frequency_penalty":   func(p *oai.ChatCompletionNewParams) any { return &p.FrequencyPenalty },
	"presence_penalty":    func(p *oai.ChatCompletionNewParams) any { return &p.PresencePenalty },
	"seed":                func(p *oai.ChatCompletionNewParams) any { return &p.Seed },
	"n":                   func(p *oai.ChatCompletionNewParams) any { return &p.N },
	"top_logprobs":        func(p *oai.ChatCompletionNewParams) any { return &p.TopLogprobs },
	"user":                func(p *oai.ChatCompletionNewParams) any { return &p.User },
	"reasoning_effort":    func(p *oai.ChatCompletionNewParams) any { return &p.ReasoningEffort },
	"service_tier":        func(p *oai.ChatCompletionNewParams) any { return &p.ServiceTier },
	"prompt_cache_key":    func(p *oai.ChatCompletionNewParams) any { return &p.PromptCacheKey },
	"safety_identifier":   func(p *oai.ChatCompletionNewParams) any { return &p.SafetyIdentifier },
	"parallel_tool_calls": func(p *oai.ChatCompletionNewParams) any { return &p.ParallelToolCalls },
	"logprobs":            func(p *oai.ChatCompletionNewParams) any { return &p.Logprobs },
	"store":               func(p *oai.ChatCompletionNewParams) any { return &p.Store },
	"stop":                func(p *oai.ChatCompletionNewParams) any { return &p.Stop },
}

// jsonKey escapes a top-level body key for option.WithJSONSet, whose keys are
// sjson paths: every character other than a letter, digit, '_' or '-' is
// escaped with a backslash, so "a.b" sets the key "a.b", not "b" inside "a".
func jsonKey(k string) string {
	if !strings.ContainsFunc(k, special) {
		return k
	}
	var b strings.Builder
	for _, c := range k {
		if special(c) && c < 0x80 {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// special reports whether c is other than a letter, digit, '_' or '-'.
func special(c rune) bool {
	return !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9')
}
