package anthropic

import (
	"errors"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/portico-llm/portico"
)

// Dialect is the [portico.Thought].Dialect of the thinking and
// redacted_thinking blocks this adapter returns; it sends back only
// Thoughts of this dialect.
const Dialect = "anthropic"

// minBudget is the least budget_tokens the API takes ("Must be ≥1024 and
// less than max_tokens": the SDK's ThinkingConfigEnabledParam).
const minBudget = 1024

// thinking sets p's extended thinking from req.Reasoning: enabled with
// budget_tokens of [portico.Reasoning.Tokens] (at least 1024), within a
// max_tokens that [portico.Request.OutputBound] already grew by it. It
// sends no thinking when the request continues a tool-use turn whose
// assistant message carries no thinking block of this dialect (the answer
// of another provider after a fallback): the API would refuse it ("a final
// assistant message must start with a thinking block"), and advises to
// disable thinking there.
func thinking(p *sdk.MessageNewParams, req *portico.Request) error {
	r := req.Reasoning
	if r == nil || !thoughtsFit(req.Messages) {
		return nil
	}
	if _, set := req.Extra["thinking"]; set {
		return errors.New(`anthropic: Extra key "thinking" with a Reasoning setting`)
	}
	budget := int64(max(r.Tokens(), minBudget))
	if budget >= p.MaxTokens {
		// Another route may think on less, or not at all: this route's, not the request's.
		return &portico.Error{Class: portico.Incompatible, Reason: "reasoning budget", NotSent: true,
			Err: errors.New("anthropic: reasoning budget of at least 1024 tokens not below max_tokens")}
	}
	p.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
	return nil
}

// thoughtsFit reports whether a request with thinking enabled can be sent
// with msgs: false when they end with tool results answering an assistant
// message that has tool calls and no thinking block of this dialect.
func thoughtsFit(msgs []portico.Message) bool {
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == portico.RoleTool {
		i--
	}
	if i == len(msgs)-1 || i < 0 || msgs[i].Role != portico.RoleAssistant || len(msgs[i].ToolCalls) == 0 {
		return true
	}
	for _, t := range msgs[i].Thoughts {
		if t.Dialect == Dialect {
			return true
		}
	}
	return false
}

// thoughtBlocks appends msg's thoughts of this dialect to blocks, as the
// thinking and redacted_thinking blocks they came from, in order; the
// API wants them before the text and tool calls of the turn.
func thoughtBlocks(blocks []sdk.ContentBlockParamUnion, msg *portico.Message) []sdk.ContentBlockParamUnion {
	for _, t := range msg.Thoughts {
		if t.Dialect != Dialect {
			continue
		}
		switch t.Kind {
		case "thinking":
			blocks = append(blocks, sdk.NewThinkingBlock(t.Signature, t.Text))
		case "redacted_thinking":
			blocks = append(blocks, sdk.NewRedactedThinkingBlock(t.Signature))
		}
	}
	return blocks
}

// thought returns the Thought of a block of type typ with its thinking,
// signature and data fields: a thinking or redacted_thinking block's, and
// false for any other type.
func thought(typ, thinking, signature, data string) (portico.Thought, bool) {
	switch typ {
	case "thinking":
		return portico.Thought{Dialect: Dialect, Kind: typ, Text: thinking, Signature: signature}, true
	case "redacted_thinking":
		return portico.Thought{Dialect: Dialect, Kind: typ, Signature: data}, true
	}
	return portico.Thought{}, false
}
