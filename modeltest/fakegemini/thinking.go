package fakegemini

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// The shapes of Gemini's thinking, from its documentation
// (https://ai.google.dev/gemini-api/docs/thinking and
// https://ai.google.dev/gemini-api/docs/thought-signatures) and the Go SDK
// (google.golang.org/genai: ThinkingConfig, Part.Thought,
// Part.ThoughtSignature, GenerateContentResponseUsageMetadata.
// ThoughtsTokenCount): a request's generationConfig.thinkingConfig
// {"includeThoughts": true, "thinkingBudget": N}; an answer's thought
// summary as a part {"text": ..., "thought": true} before the answer's
// parts; a Gemini 3 model's "thoughtSignature" on its first function call
// part (required back with that call) or on the last part of a text
// answer; usageMetadata.thoughtsTokenCount apart from candidatesTokenCount.

// thinkingConfig is generationConfig.thinkingConfig.
type thinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts"`
	ThinkingBudget  *int   `json:"thinkingBudget"`
	ThinkingLevel   string `json:"thinkingLevel"`
}

// includeThoughts reports whether the request asked for thought summaries.
func (c *call) includeThoughts() bool {
	tc := c.req.GenerationConfig.ThinkingConfig
	return tc != nil && tc.IncludeThoughts
}

// thoughtSummary is the summary of an answer with includeThoughts and no
// ModelConfig.ThinkEvery: one sentence naming the turn.
func (c *call) thoughtSummary() string {
	return "Thinking about turn " + strconv.Itoa(len(c.req.Contents)) + "."
}

// callSignature is the fake's thought signature of a function call: of the
// model, the call's name and id, so that a signature sent back with
// another call, or made up, is refused.
func callSignature(model string, fc *functionCall) string {
	return base64.StdEncoding.EncodeToString([]byte("sig:" + model + ":" + fc.Name + ":" + fc.ID))
}

// textSignature is the fake's thought signature of a text answer.
func textSignature(model, id string) string {
	return base64.StdEncoding.EncodeToString([]byte("sig:" + model + ":text:" + id))
}

// thoughtTokens is usageMetadata.thoughtsTokenCount: ModelConfig.
// ThoughtsTokens, at least the words of the thought summary.
func (c *call) thoughtTokens(summary string) int {
	return max(c.m.ThoughtsTokens, len(strings.Fields(summary)))
}

// skipsValidator reports whether sig is one of the dummy signatures Gemini
// documents for function calls it did not make
// (https://ai.google.dev/gemini-api/docs/thought-signatures, "FAQs"), in
// the base64 the request carries.
func skipsValidator(sig string) bool {
	b, err := base64.StdEncoding.DecodeString(sig)
	return err == nil && (string(b) == "skip_thought_signature_validator" || string(b) == "context_engineering_is_the_way_to_go")
}
