package openai

import (
	"slices"
	"strconv"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
)

// The SDK decodes leniently: a number where a string belongs becomes its
// text, a quoted number an int, a field of another type its zero value. The
// adapter checks the JSON type of every field it reads, from the raw text
// the SDK keeps, so that such a body is refused rather than taken for an
// answer. Omitted and null fields pass: the API sends many as null.

// jsonType is the first byte of a JSON value of each type.
type jsonType byte

const (
	tString jsonType = '"'
	tObject jsonType = '{'
	tArray  jsonType = '['
	tInt    jsonType = '0' // a JSON number that is an integer
)

// typed reports whether f is omitted, null or of type t.
func typed(f respjson.Field, t jsonType) bool {
	raw := f.Raw()
	if raw == "" || raw == respjson.Null {
		return true
	}
	if t == tInt {
		_, err := strconv.ParseInt(raw, 10, 64)
		return err == nil
	}
	return raw[0] == byte(t)
}

// allTyped reports whether every field is omitted, null or of type t.
func allTyped(t jsonType, fs ...respjson.Field) bool {
	for _, f := range fs {
		if !typed(f, t) {
			return false
		}
	}
	return true
}

// topTyped reports whether a completion's or a chunk's id, model, choices
// and usage have their documented types, with no negative count.
func topTyped(id, model, choices, usage respjson.Field, u *oai.CompletionUsage) bool {
	return allTyped(tString, id, model) && typed(choices, tArray) && typed(usage, tObject) &&
		allTyped(tInt, u.JSON.PromptTokens, u.JSON.CompletionTokens, u.JSON.TotalTokens, u.PromptTokensDetails.JSON.CachedTokens) &&
		typed(u.JSON.PromptTokensDetails, tObject) &&
		u.PromptTokens >= 0 && u.CompletionTokens >= 0 && u.PromptTokensDetails.CachedTokens >= 0
}

// checkCompletion returns why a non-streamed completion is not one, or "".
func checkCompletion(c *oai.ChatCompletion) string {
	switch {
	case !topTyped(c.JSON.ID, c.JSON.Model, c.JSON.Choices, c.JSON.Usage, &c.Usage):
		return "mistyped completion"
	case len(c.Choices) == 0:
		return "no choices"
	}
	ch := &c.Choices[0]
	msg := &ch.Message
	switch {
	case !ch.JSON.Message.Valid() || !typed(ch.JSON.Message, tObject) || !typed(ch.JSON.Index, tInt) ||
		!allTyped(tString, ch.JSON.FinishReason, msg.JSON.Content, msg.JSON.Refusal) || !typed(msg.JSON.ToolCalls, tArray):
		return "mistyped choice"
	case ch.FinishReason == "":
		return "no finish reason"
	case slices.ContainsFunc(msg.ToolCalls, mistypedCall):
		return "mistyped tool call"
	}
	return ""
}

// mistypedCall reports whether a completion's tool call has a field of the
// wrong type.
func mistypedCall(tc oai.ChatCompletionMessageToolCallUnion) bool {
	return !allTyped(tString, tc.JSON.ID, tc.JSON.Type, tc.Function.JSON.Name, tc.Custom.JSON.Name, tc.Custom.JSON.Input) ||
		!allTyped(tObject, tc.JSON.Function, tc.JSON.Custom) || !argsTyped(tc.Function.JSON.Arguments)
}

// checkChunk returns why a stream chunk is not one, or "".
func checkChunk(c *oai.ChatCompletionChunk) string {
	if !topTyped(c.JSON.ID, c.JSON.Model, c.JSON.Choices, c.JSON.Usage, &c.Usage) {
		return "mistyped chunk"
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		d := &ch.Delta
		if !typed(ch.JSON.Index, tInt) || !typed(ch.JSON.Delta, tObject) || !allTyped(tString, ch.JSON.FinishReason, d.JSON.Content, d.JSON.Refusal) || !typed(d.JSON.ToolCalls, tArray) {
			return "mistyped chunk"
		}
		if slices.ContainsFunc(d.ToolCalls, mistypedDelta) {
			return "mistyped tool call"
		}
	}
	return ""
}

// mistypedDelta reports whether a chunk's tool call delta has a field of
// the wrong type.
func mistypedDelta(tc oai.ChatCompletionChunkChoiceDeltaToolCall) bool {
	return !typed(tc.JSON.Index, tInt) || !allTyped(tString, tc.JSON.ID, tc.JSON.Type, tc.Function.JSON.Name) ||
		!typed(tc.JSON.Function, tObject) || !argsTyped(tc.Function.JSON.Arguments)
}

// argsTyped reports whether a tool call's arguments field is omitted, null,
// a string (OpenAI's shape: the arguments' JSON text) or an object (the
// arguments themselves, as llama.cpp's server sent them in 2026,
// ggml-org/llama.cpp#20198, and Hugging Face TGI,
// huggingface/text-generation-inference#2136).
func argsTyped(f respjson.Field) bool { return typed(f, tString) || typed(f, tObject) }

// arguments returns the text of a tool call's arguments field f, whose
// string value the SDK decoded as s: the object's own text when the server
// sent an object, else s.
func arguments(f respjson.Field, s string) string {
	if raw := f.Raw(); raw != "" && raw[0] == byte(tObject) {
		return raw
	}
	return s
}
