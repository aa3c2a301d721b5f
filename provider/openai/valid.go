package openai

import (
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
)

// The SDK decodes leniently: a field of the wrong JSON type is left at its
// zero value and marked invalid in the struct's JSON metadata. The adapter
// reads that metadata, so that such a body is refused rather than taken for
// an answer with empty fields.

// bad reports whether a field was sent with a JSON type the SDK could not
// read (omitted and null fields are not bad).
func bad(f respjson.Field) bool { return !f.Valid() && f.Raw() != "" && f.Raw() != respjson.Null }

// badFields reports whether any of the fields is bad.
func badFields(fs ...respjson.Field) bool {
	for _, f := range fs {
		if bad(f) {
			return true
		}
	}
	return false
}

// badUsage reports whether usage is mistyped or negative.
func badUsage(u *oai.CompletionUsage) bool {
	return badFields(u.JSON.PromptTokens, u.JSON.CompletionTokens, u.JSON.TotalTokens, u.JSON.PromptTokensDetails) ||
		bad(u.PromptTokensDetails.JSON.CachedTokens) ||
		u.PromptTokens < 0 || u.CompletionTokens < 0 || u.PromptTokensDetails.CachedTokens < 0
}

// checkCompletion returns why a non-streamed completion is not one, or "".
func checkCompletion(c *oai.ChatCompletion) string {
	switch {
	case badFields(c.JSON.ID, c.JSON.Model, c.JSON.Choices, c.JSON.Usage) || badUsage(&c.Usage):
		return "mistyped completion"
	case len(c.Choices) == 0:
		return "no choices"
	}
	ch := &c.Choices[0]
	msg := &ch.Message
	switch {
	case !ch.JSON.Message.Valid() || badFields(ch.JSON.Index, ch.JSON.FinishReason, msg.JSON.Content, msg.JSON.ToolCalls, msg.JSON.Refusal):
		return "mistyped choice"
	case ch.FinishReason == "":
		return "no finish reason"
	}
	for i := range msg.ToolCalls {
		tc := &msg.ToolCalls[i]
		if badFields(tc.JSON.ID, tc.JSON.Type, tc.JSON.Function, tc.JSON.Custom,
			tc.Function.JSON.Name, tc.Function.JSON.Arguments, tc.Custom.JSON.Name, tc.Custom.JSON.Input) {
			return "mistyped tool call"
		}
	}
	return ""
}

// checkChunk returns why a stream chunk is not one, or "".
func checkChunk(c *oai.ChatCompletionChunk) string {
	if badFields(c.JSON.ID, c.JSON.Model, c.JSON.Choices, c.JSON.Usage) || badUsage(&c.Usage) {
		return "mistyped chunk"
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		d := &ch.Delta
		if badFields(ch.JSON.Index, ch.JSON.FinishReason, ch.JSON.Delta, d.JSON.Content, d.JSON.ToolCalls, d.JSON.Refusal) {
			return "mistyped chunk"
		}
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			if badFields(tc.JSON.Index, tc.JSON.ID, tc.JSON.Type, tc.JSON.Function, tc.Function.JSON.Name, tc.Function.JSON.Arguments) {
				return "mistyped tool call"
			}
		}
	}
	return ""
}
