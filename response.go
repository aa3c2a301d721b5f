package portico

import (
	"encoding/json"
	"time"
)

// FinishReason says why the model stopped generating.
type FinishReason string

// The finish reasons Portico distinguishes; adapters map their provider's values
// onto these, and pass any other value through unchanged.
const (
	FinishStop          FinishReason = "stop"           // a natural end or a stop sequence
	FinishLength        FinishReason = "length"         // MaxOutputTokens or the context window cut the answer: it is truncated
	FinishToolCalls     FinishReason = "tool_calls"     // the model asks for the calls in Response.ToolCalls
	FinishContentFilter FinishReason = "content_filter" // the provider withheld content
)

// ToolCall is a call the model asks the application to make.
type ToolCall struct {
	// ID is the provider's id of the call; a RoleTool message answers it.
	ID string
	// Name is the tool's name, as declared in Request.Tools (validate checks it).
	Name string
	// Arguments is the JSON text of the arguments, exactly as the model produced
	// it: it may be invalid JSON, which package validate reports, or another
	// shape of the arguments object (a string holding it, nothing for no
	// arguments), which package validate accepts and hands on as the
	// object's text.
	Arguments json.RawMessage
}

// Usage counts the tokens a call consumed, as the provider reported them,
// except where its holder says it is an estimate ([Response.Usage] of a
// continued stream).
type Usage struct {
	InputTokens       int // prompt tokens, including cache reads and cache writes
	OutputTokens      int // completion tokens, including reasoning tokens
	ReasoningTokens   int // the part of OutputTokens the model spent reasoning; 0 when the provider does not say
	CachedInputTokens int // cache reads: the part of InputTokens served from the provider's prompt cache
	// CacheWriteTokens is the part of InputTokens written to the provider's
	// prompt cache (Anthropic's cache_creation_input_tokens), at every TTL;
	// CacheWrite1hTokens the part of it written for one hour, priced apart
	// ([Capabilities].CacheWrite1hPrice).
	CacheWriteTokens, CacheWrite1hTokens int
	// LimitExemptTokens is the part of InputTokens that the provider's
	// token rate limits do not count, as its adapter documents (Anthropic's
	// input-tokens-per-minute limit leaves out cache reads); see
	// [Usage.Limited].
	LimitExemptTokens int
}

// Quota is one provider-announced limit: how much of it remains and when it resets.
type Quota struct {
	// Known is true when the provider sent this quota's headers.
	Known bool
	// Limit is the quota's size per its period (requests or tokens); 0 if not sent.
	Limit int
	// Remaining is how much of Limit is left now.
	Remaining int
	// Reset is how long until Remaining returns to Limit; 0 if not sent.
	Reset time.Duration
}

// RateLimit is what a provider said about its limits on one response
// (OpenAI's x-ratelimit-limit-*, x-ratelimit-remaining-*, x-ratelimit-reset-*
// headers; Anthropic's anthropic-ratelimit-*). Adapters surface it on
// [Response.RateLimit] and [Error.RateLimit] so that package ratelimit can
// adopt the provider's tighter view.
type RateLimit struct {
	Requests Quota // requests per period
	Tokens   Quota // tokens per period (input plus output)
	// InputTokens and OutputTokens are limits a provider keeps apart from
	// Tokens, on input and on output tokens alone (Anthropic's ITPM and
	// OTPM); not Known from providers that have none.
	InputTokens  Quota
	OutputTokens Quota
}

// Hop records one route a routing layer left before the answer: which and why.
type Hop struct {
	// Route is the name of the route that was left or skipped.
	Route string
	// Reason is a short, content-free reason ("breaker open", "context window",
	// "transient", ...).
	Reason string
	// Err is the error the route returned, or nil when it was skipped unasked.
	Err error
	// Chunks and Bytes count what the route delivered to the caller before
	// its stream broke, in chunks and bytes of text, when the answer was
	// continued from there (see [Request.ContinueOnBreak]) by the next hop's
	// route or Response.Route; zero for a route left before its first chunk.
	Chunks, Bytes int
}

// Response is a model's answer.
//
// Layers may set the routing fields (Route, Hops, Cost) on the Response they
// return; a Response is owned by the caller once Generate returns it.
type Response struct {
	// ID is the provider's id of the answer ("chatcmpl-..."), for correlating
	// with the provider's logs (gen_ai.response.id); empty when unknown.
	ID string
	// Text is the answer's text (the JSON text, under a Request.Schema).
	Text string
	// ToolCalls the model asks for; FinishReason is then FinishToolCalls.
	ToolCalls []ToolCall
	// Thoughts are the model's reasoning blocks, in order: readable text
	// where the provider gives it ([Response.ReasoningText]) and the opaque
	// data it needs back in the next turn ([Response.Message]).
	Thoughts []Thought
	// Embeddings are the vectors of an embedding request
	// ([Request].Embedding), one per input in order; nil for any other.
	Embeddings [][]float32
	// FinishReason says why the model stopped.
	FinishReason FinishReason
	// Usage is the provider's token count for the call. The answer of a
	// fallback group that continued a broken stream (ContinueOnBreak) sums
	// every attempt's usage, and counts for a broken attempt whose error
	// reported none (a cut stream reports none) an estimate: its request's
	// input by the group's Estimator, and the delivered bytes / 4 as output.
	Usage Usage
	// Model is the model that actually answered, as the provider named it.
	Model string
	// RateLimit is the provider's view of its limits after this call; nil if the
	// provider sent none.
	RateLimit *RateLimit
	// Route names the route that answered, set by routing layers (fallback,
	// router, cascade, balancer); empty when none was involved.
	Route string
	// Hops lists the routes left before Route answered, in order, with why.
	Hops []Hop
	// Cost is the realised cost of producing this answer in the price unit of
	// [Capabilities] (e.g. US dollars), summed by routing layers over the calls
	// they made for it whose usage they know: the answering call, failed
	// calls whose [Error.Usage] reports what was billed (a failed call without
	// it is not counted), and a hedge that answered too but lost the race; 0
	// when no layer priced it.
	Cost float64
}
