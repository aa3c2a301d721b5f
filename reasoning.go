package portico

import (
	"math"
	"strings"
)

// Effort is how hard a reasoning model should think, in the words of
// OpenAI's reasoning_effort; adapters of providers that take a token
// budget instead map it to one (see [Reasoning]).
type Effort string

// The efforts a [Reasoning] setting may ask for. The zero Effort leaves it
// to the Budget, or to the provider's default.
const (
	EffortMinimal Effort = "minimal" // as little reasoning as the model allows
	EffortLow     Effort = "low"
	EffortMedium  Effort = "medium"
	EffortHigh    Effort = "high"
)

// Budgets are the token budgets an adapter of a budget-taking provider
// (Anthropic's thinking.budget_tokens, Gemini's thinkingConfig.thinkingBudget)
// sends for an Effort without a Budget: Anthropic's minimum of 1024 for
// minimal and low, then 2048 and 4096, as LiteLLM maps reasoning_effort
// (docs.litellm.ai, "Reasoning Content"). [Reasoning.Tokens] applies it.
var effortBudgets = map[Effort]int{EffortMinimal: 1024, EffortLow: 1024, EffortMedium: 2048, EffortHigh: 4096}

// Reasoning is a request's reasoning setting ([Request].Reasoning): how much
// the model may think before it answers, and whether the caller sees it.
// Each adapter maps it to its provider's form (Anthropic thinking, OpenAI
// reasoning_effort, Gemini thinkingConfig); a routing layer sends it only to
// routes whose [Capabilities].Reasoning is set ([Route.RequestFor]), and
// filters the others out when Required.
type Reasoning struct {
	// Effort asks for a level of effort; "" leaves it to Budget. An adapter
	// whose provider takes a budget sends [Reasoning.Tokens].
	Effort Effort
	// Budget is the most tokens the model may spend thinking, counted in
	// the answer's output tokens: below MaxOutputTokens when that is set,
	// and added to the default N_max when it is not ([Request.OutputBound]).
	// Zero leaves it to Effort. A provider that takes only an effort gets
	// the least Effort whose budget covers it ([Reasoning.Level]).
	Budget int
	// Required filters out the routes that do not reason ([Capabilities.Fits]
	// returns Incompatible "reasoning"); otherwise such a route is sent the
	// request without the setting.
	Required bool
	// Stream, on a streamed request, delivers the reasoning as it arrives
	// to OnChunk, in [Chunk].Reasoning. A reasoning chunk that reached the
	// caller counts as delivered like text: no layer retries after it.
	// Without Stream, reasoning reaches no OnChunk, but every layer that
	// times a stream counts it as progress ([Progress]).
	Stream bool
}

// Tokens returns the token budget r asks for: Budget when set, otherwise
// the budget of its Effort (1024 for minimal and low, 2048 for medium, 4096
// for high), and 0 with neither.
func (r *Reasoning) Tokens() int {
	if r.Budget > 0 {
		return r.Budget
	}
	return effortBudgets[r.Effort]
}

// Level returns the effort r asks for: Effort when set, otherwise the least
// effort whose budget covers Budget (low up to 1024 tokens, medium up to
// 2048, high above), and "" with neither.
func (r *Reasoning) Level() Effort {
	switch {
	case r.Effort != "":
		return r.Effort
	case r.Budget <= 0:
		return ""
	case r.Budget <= effortBudgets[EffortLow]:
		return EffortLow
	case r.Budget <= effortBudgets[EffortMedium]:
		return EffortMedium
	}
	return EffortHigh
}

// validate returns the Permanent error of a setting wrong on any route, for
// a request whose MaxOutputTokens is maxOut.
func (r *Reasoning) validate(maxOut int) error {
	switch {
	case r.Effort != "" && effortBudgets[r.Effort] == 0:
		return errEffort
	case r.Budget < 0:
		return errBudget
	case maxOut > 0 && r.Tokens() >= maxOut:
		return errBudgetMax
	}
	return nil
}

// OutputBound returns N_max, the most output tokens r's answer may have,
// reasoning included (0 for an embedding request, which has no output):
// MaxOutputTokens when set, otherwise def (a route's or
// a limiter's default; zero or less is returned as is) plus the reasoning budget r asks for
// ([Reasoning.Tokens]), so that thinking does not eat the answer's room.
// Adapters send it as their provider's output limit, and rate limiters
// reserve it.
func (r *Request) OutputBound(def int) int {
	if r.Embedding != nil {
		return 0 // an embedding has no output
	}
	if r.MaxOutputTokens > 0 {
		return r.MaxOutputTokens
	}
	if r.Reasoning == nil || def <= 0 {
		return def
	}
	return def + min(r.Reasoning.Tokens(), math.MaxInt-def)
}

// Thought is one block of a model's reasoning as its provider returned it:
// the readable text or summary where the provider gives one, and the opaque
// data it needs back to go on (Anthropic's thinking signatures and
// redacted_thinking data, Gemini's thought signatures, the encrypted
// content of OpenAI's reasoning items). An application passes an answer's
// Thoughts back unchanged in the next request's assistant message
// ([Response.Message]), without knowing the provider.
//
// Dialect says whose it is: an adapter sends back only the Thoughts of its
// own dialect and leaves every other one out, so a block is never sent to
// a provider that would refuse it (after a fallback, a route of another
// provider sees the conversation without them).
type Thought struct {
	// Dialect names the API that made the block and alone accepts it back
	// ("anthropic", "gemini", "openai-responses"; each adapter documents its own).
	Dialect string
	// Kind is the provider's name for the block ("thinking",
	// "redacted_thinking", "reasoning", "functionCall"...), for its adapter.
	Kind string
	// ID ties the block to something else in the answer where the
	// provider needs it: the id of an OpenAI reasoning item, or the
	// ToolCall.ID of the Gemini function call that carried the signature.
	ID string
	// Text is the readable reasoning or its summary; empty when the
	// provider withheld it (redacted or encrypted).
	Text string
	// Signature is the provider's opaque data, passed back byte for byte:
	// never shown, logged or parsed.
	Signature string
}

// ReasoningText returns the readable reasoning of r's Thoughts, in order,
// their texts joined by blank lines; "" when none has text.
func (r *Response) ReasoningText() string {
	var b strings.Builder
	for _, t := range r.Thoughts {
		if t.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(t.Text)
	}
	return b.String()
}

// Message returns r as the assistant message to append to the conversation
// for the next turn: its Text, ToolCalls and Thoughts, which a tool-use loop
// with reasoning must send back (Anthropic refuses a tool result whose call
// came without its thinking block; Gemini asks for its signatures).
func (r *Response) Message() Message {
	m := Message{Role: RoleAssistant, ToolCalls: r.ToolCalls, Thoughts: r.Thoughts}
	if r.Text != "" {
		m.Content = []Part{{Kind: PartText, Text: r.Text}}
	}
	return m
}

// The errors of a malformed reasoning setting, allocated once.
var (
	errEffort    error = &Error{Class: Permanent, Reason: "unknown Reasoning.Effort", NotSent: true}
	errBudget    error = &Error{Class: Permanent, Reason: "negative Reasoning.Budget", NotSent: true}
	errBudgetMax error = &Error{Class: Permanent, Reason: "reasoning budget not below MaxOutputTokens", NotSent: true}
	errReasoning error = &Error{Class: Incompatible, Reason: "reasoning", NotSent: true}
)
