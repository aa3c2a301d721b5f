package openai

import (
	"context"
	"encoding/json"
	"errors"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// ChatDialect is the [portico.Thought].Dialect of the reasoning text a
// Chat Completions answer carries in an OpenAI-compatible server's
// reasoning_content or reasoning field (DeepSeek, vLLM, SGLang, Groq,
// OpenRouter). Chat Completions takes no reasoning back, so the adapter
// sends none: such Thoughts are for display.
const ChatDialect = "openai-chat"

// reasoningKeys are the message and delta fields that carry reasoning
// text on OpenAI-compatible servers, in the order they are read:
// reasoning_content (DeepSeek's API, vLLM and SGLang's reasoning parsers)
// and reasoning (OpenRouter, Groq's parsed reasoning_format, newer vLLM).
// OpenAI's own Chat Completions returns no reasoning text.
var reasoningKeys = [...]string{"reasoning_content", "reasoning"}

// reasoningEffort sets p's reasoning_effort from req.Reasoning's level
// ([portico.Reasoning.Level]); a Reasoning without effort or budget sends
// none (the model's default).
func reasoningEffort(p *oai.ChatCompletionNewParams, req *portico.Request) error {
	r := req.Reasoning
	if r == nil || r.Level() == "" {
		return nil
	}
	if _, set := req.Extra["reasoning_effort"]; set {
		return errors.New(`openai: Extra key "reasoning_effort" with a Reasoning setting`)
	}
	p.ReasoningEffort = shared.ReasoningEffort(r.Level())
	return nil
}

// reasoningText returns the reasoning text among a message's or delta's
// extra fields, and its key; "" when there is none.
func reasoningText(extra map[string]respjson.Field) (text, key string) {
	for _, k := range reasoningKeys {
		f, ok := extra[k] // an extra field is never Valid: read its raw JSON
		if !ok || f.Raw() == "" {
			continue
		}
		if json.Unmarshal([]byte(f.Raw()), &text) == nil && text != "" {
			return text, k
		}
	}
	return "", ""
}

// think takes in a reasoning delta of a stream: to OnChunk when the
// caller asked for the reasoning stream, as progress otherwise.
func (st *streamState) think(ctx context.Context, text, key string) error {
	if n := len(st.resp.Thoughts); n == 0 || st.resp.Thoughts[n-1].Kind != key {
		st.resp.Thoughts = append(st.resp.Thoughts, portico.Thought{Dialect: ChatDialect, Kind: key})
	}
	st.resp.Thoughts[len(st.resp.Thoughts)-1].Text += text
	return adapt.Think(ctx, st.req.Reasoning != nil && st.req.Reasoning.Stream, text, st.deliver)
}
