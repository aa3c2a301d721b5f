package fakeanthropic

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"
)

// The shapes of extended thinking, from Anthropic's documentation
// (https://docs.claude.com/en/docs/build-with-claude/extended-thinking) and
// its Go SDK (anthropic-sdk-go v2: ThinkingConfigEnabledParam,
// ThinkingBlockParam, RedactedThinkingBlockParam): a request's thinking
// {"type":"enabled","budget_tokens":N}, N >= 1024 and below max_tokens; an
// answer's {"type":"thinking","thinking":T,"signature":S} and
// {"type":"redacted_thinking","data":D} blocks before its text and tool
// calls, streamed as a content_block_start of the thinking block, then
// thinking_delta and one signature_delta.

// thinkingConfig is a request's thinking parameter.
type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// thinkingEnabled reports whether the request turned extended thinking on.
func (c *call) thinkingEnabled() bool {
	return c.req.Thinking != nil && c.req.Thinking.Type == "enabled"
}

// signature is the fake's signature of a thinking text: base64 of a hash of
// the model's name and the text, so that a changed text or a signature of
// another model is refused as the API refuses it.
func signature(model, text string) string {
	h := fnv.New64a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(text))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h.Sum64())
	return base64.StdEncoding.EncodeToString(append([]byte("sig:"), b[:]...))
}

// redactedData is the fake's data of a redacted_thinking block over
// text: base64 of the text and its signature.
func redactedData(model, text string) string {
	return base64.StdEncoding.EncodeToString([]byte(signature(model, text) + "\n" + text))
}

// validRedacted reports whether data is redactedData of some text for model.
func validRedacted(model, data string) bool {
	raw, err := base64.StdEncoding.DecodeString(data)
	sig, text, ok := strings.Cut(string(raw), "\n")
	return err == nil && ok && sig == signature(model, text)
}

// thinkingRefusal returns the message of the 400 the API answers to a
// request whose thinking it refuses, or "": a budget below 1024 or not
// below max_tokens; a thinking block whose signature (or a
// redacted_thinking block whose data) this model did not make; and, with
// thinking enabled, tool results answering an assistant message that does
// not start with a thinking block (the API's message, as quoted in
// BerriAI/litellm#9020).
func (c *call) thinkingRefusal() string {
	return cmp.Or(c.budgetRefusal(), c.signatureRefusal(), c.toolTurnRefusal())
}

// budgetRefusal refuses, with thinking enabled, a budget below 1024 or
// not below max_tokens.
func (c *call) budgetRefusal() string {
	if !c.thinkingEnabled() {
		return ""
	}
	switch b := c.req.Thinking.BudgetTokens; {
	case b < 1024:
		return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
	case b >= *c.req.MaxTokens:
		return "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
	}
	return ""
}

// signatureRefusal refuses an assistant's thinking block whose signature,
// or redacted_thinking block whose data, this model did not make.
func (c *call) signatureRefusal() string {
	for i, m := range c.req.Messages {
		var blocks []block
		if m.Role != "assistant" || json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for j, b := range blocks {
			at := "messages." + strconv.Itoa(i) + ".content." + strconv.Itoa(j)
			switch {
			case b.Type == "thinking" && b.Signature != signature(c.Model, b.Thinking):
				return at + ": Invalid `signature` in `thinking` block"
			case b.Type == "redacted_thinking" && !validRedacted(c.Model, b.Data):
				return at + ": Invalid `data` in `redacted_thinking` block"
			}
		}
	}
	return ""
}

// toolTurnRefusal refuses, with thinking enabled, tool results answering
// an assistant message that does not start with a thinking block.
func (c *call) toolTurnRefusal() string {
	if !c.thinkingEnabled() || !c.lastIsToolResult() || len(c.req.Messages) < 2 {
		return ""
	}
	i := len(c.req.Messages) - 2
	var blocks []block
	if m := c.req.Messages[i]; m.Role != "assistant" || json.Unmarshal(m.Content, &blocks) != nil || len(blocks) == 0 {
		return ""
	}
	if t := blocks[0].Type; t != "thinking" && t != "redacted_thinking" {
		return "messages." + strconv.Itoa(i) + ".content.0.type: Expected `thinking` or `redacted_thinking`, but found `" + t +
			"`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"
	}
	return ""
}

// thoughts is the thinking text of an answer with thinking enabled and no
// ModelConfig.ThinkEvery: one sentence naming the turn, one token a word.
func (c *call) thoughts() string {
	return "Thinking about turn " + strconv.Itoa(len(c.req.Messages)) + "."
}

// thinkingBlock is the block of an answer's thinking text, as the model
// says: redacted_thinking with ModelConfig.RedactThinking.
func (c *call) thinkingBlock(text string) map[string]any {
	if c.m.cfg.RedactThinking {
		return map[string]any{"type": "redacted_thinking", "data": redactedData(c.Model, text)}
	}
	return map[string]any{"type": "thinking", "thinking": text, "signature": signature(c.Model, text)}
}
