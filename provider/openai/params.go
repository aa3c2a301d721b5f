package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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
	p.Messages = make([]oai.ChatCompletionMessageParamUnion, 0, len(req.Messages))
	for i := range req.Messages {
		msg, err := message(&req.Messages[i])
		if err != nil {
			return p, nil, fmt.Errorf("openai: message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, msg)
	}
	for _, t := range req.Tools {
		fd := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = oai.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &fd.Parameters); err != nil {
				return p, nil, fmt.Errorf("openai: tool %q: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(fd))
	}
	if s := req.Schema; s != nil {
		if !json.Valid(s.JSON) {
			return p, nil, errors.New("openai: response schema is not valid JSON")
		}
		name := s.Name
		if name == "" {
			name = "response"
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   name,
				Strict: oai.Bool(s.Strict),
				Schema: s.JSON,
			},
		}
	}
	if n := req.MaxOutputTokens; n > 0 {
		if m.cfg.LegacyMaxTokens {
			p.MaxTokens = oai.Int(int64(n))
		} else {
			p.MaxCompletionTokens = oai.Int(int64(n))
		}
	}
	var opts []option.RequestOption
	for k, v := range req.Extra {
		switch k {
		case "model", "messages", "stream", "stream_options":
			return p, nil, fmt.Errorf("openai: Extra key %q is the adapter's to set", k)
		}
		if setExtra(&p, k, v) {
			continue
		}
		if !adapt.Encodable(v) { // the SDK would send it as it is, not JSON
			return p, nil, fmt.Errorf("openai: Extra key %q: value is not JSON", k)
		}
		opts = append(opts, option.WithJSONSet(jsonKey(k), v))
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == portico.RoleAssistant {
		switch m.cfg.Prefill {
		case PrefillContinueFinalMessage:
			opts = append(opts, option.WithJSONSet("continue_final_message", true), option.WithJSONSet("add_generation_prompt", false))
		case PrefillPrefixFlag:
			opts = append(opts, option.WithJSONSet("messages."+strconv.Itoa(len(p.Messages)-1)+".prefix", true))
		}
	}
	return p, opts, nil
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
			default:
				return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown part kind %v", part.Kind)
			}
		}
		return oai.UserMessage(parts), nil
	case portico.RoleAssistant:
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
	case portico.RoleTool:
		text, err := adapt.TextOnly(msg.Content)
		if err != nil {
			return oai.ChatCompletionMessageParamUnion{}, err
		}
		return oai.ToolMessage(text, msg.ToolCallID), nil
	}
	return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
}

// setExtra sets a known sampling option on p; it reports false for keys it
// does not know or values of an unexpected type, which the caller passes on
// as raw JSON.
func setExtra(p *oai.ChatCompletionNewParams, key string, v any) bool {
	switch key {
	case "temperature", "top_p", "frequency_penalty", "presence_penalty":
		f, ok := adapt.Float(v)
		if !ok {
			return false
		}
		switch key {
		case "temperature":
			p.Temperature = oai.Float(f)
		case "top_p":
			p.TopP = oai.Float(f)
		case "frequency_penalty":
			p.FrequencyPenalty = oai.Float(f)
		default:
			p.PresencePenalty = oai.Float(f)
		}
		return true
	case "seed", "n", "top_logprobs":
		f, ok := adapt.Float(v)
		if !ok || f != float64(int64(f)) {
			return false
		}
		switch key {
		case "seed":
			p.Seed = oai.Int(int64(f))
		case "n":
			p.N = oai.Int(int64(f))
		default:
			p.TopLogprobs = oai.Int(int64(f))
		}
		return true
	case "user", "reasoning_effort", "service_tier", "prompt_cache_key", "safety_identifier":
		s, ok := v.(string)
		if !ok {
			return false
		}
		switch key {
		case "user":
			p.User = oai.String(s)
		case "reasoning_effort":
			p.ReasoningEffort = shared.ReasoningEffort(s)
		case "service_tier":
			p.ServiceTier = oai.ChatCompletionNewParamsServiceTier(s)
		case "prompt_cache_key":
			p.PromptCacheKey = oai.String(s)
		default:
			p.SafetyIdentifier = oai.String(s)
		}
		return true
	case "parallel_tool_calls", "logprobs", "store":
		b, ok := v.(bool)
		if !ok {
			return false
		}
		switch key {
		case "parallel_tool_calls":
			p.ParallelToolCalls = oai.Bool(b)
		case "logprobs":
			p.Logprobs = oai.Bool(b)
		default:
			p.Store = oai.Bool(b)
		}
		return true
	case "stop":
		switch s := v.(type) {
		case string:
			p.Stop.OfString = oai.String(s)
		case []string:
			p.Stop.OfStringArray = s
		default:
			return false
		}
		return true
	}
	return false
}

// jsonKey escapes a top-level body key for option.WithJSONSet, whose keys are
// sjson paths: every character other than a letter, digit, '_' or '-' is
// escaped with a backslash, so "a.b" sets the key "a.b", not "b" inside "a".
func jsonKey(k string) string {
	plain := true
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return k
	}
	var b strings.Builder
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
