// Package anthropic makes a [portico.Model] of Anthropic's Messages API
// through the official Go SDK, github.com/anthropics/anthropic-sdk-go/v2,
// and of any server that speaks the same protocol (option.WithBaseURL).
//
// # Usage
//
//	m := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"},
//		option.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY")))
//	resp, err := m.Generate(ctx, &portico.Request{Messages: []portico.Message{
//		portico.Text(portico.RoleUser, "Say hi"),
//	}})
//
// It is a module of its own (go get
// github.com/portico-llm/portico/provider/anthropic), so that the core module
// and the other adapters never download this SDK.
//
// # Requests
//
// RoleSystem messages become the top-level system prompt, in order, wherever
// they stand; user messages carry text and images (an https: URL as a URL
// source the API fetches, a data: URL as a base64 source); an assistant
// message's ToolCalls become tool_use blocks; RoleTool messages become
// tool_result blocks answering their ToolCallID, the results of parallel
// calls in one user turn. Empty text parts are left out (the API refuses
// empty text blocks). Request.Tools become client tools whose input_schema is
// the Parameters document as sent.
//
// MaxOutputTokens becomes max_tokens, which the API requires: zero sends
// [Config.MaxTokens] ([DefaultMaxTokens], 4096, by default).
//
// Request.Extra: "stop_sequences" (or "stop", OpenAI's name, so that one
// Request reads the same on both adapters) becomes stop_sequences, "metadata"
// {"user_id": ...} metadata, and "cache_control" {"type": "ephemeral"[,
// "ttl": "5m"|"1h"]} the top-level prompt-caching hint, which puts a cache
// breakpoint on the last cacheable block of the request
// (https://docs.claude.com/en/docs/build-with-claude/prompt-caching). Every
// other key (temperature, top_p, top_k, thinking, tool_choice,
// service_tier, ...) is set on the JSON body as it is: SDK v2 has no typed
// fields for the sampling options, and the API judges them. The keys model,
// messages, system, stream, max_tokens and tools are refused (the adapter
// sets them), and so is output_config beside a Schema.
//
// # Structured output
//
// Request.Schema becomes output_config.format {"type": "json_schema",
// "schema": ...}, the Messages API's structured outputs
// (https://docs.claude.com/en/docs/build-with-claude/structured-outputs),
// which the SDK types as OutputConfigParam.Format. It is chosen over the
// older way, a tool the request forces with tool_choice, because the answer
// then is the text itself (Response.Text is the JSON, streamed as text
// deltas like any answer, as portico's contract and package validate
// expect), decoding is constrained to the schema, and the request's own
// tools and tool_choice stay the caller's. Anthropic's structured outputs are
// always constrained, so Schema.Strict changes nothing, and the format has
// no name, so Schema.Name is not sent; a schema the API does
// not support is refused by it (400, Incompatible: another provider's
// schema subset may take it). The schema is sent as
// written: the SDK's schema rewriting (transformSchema, for its beta types)
// would move unsupported keywords into descriptions, a silent repair.
//
// # Streaming
//
// A Request with OnChunk set is streamed: text_delta events reach OnChunk as
// they arrive, tool-use events as empty progress chunks, and the assembled
// Response is returned at the end; the concatenated chunk texts equal
// Response.Text. Thinking deltas reach OnChunk as Chunk.Reasoning when
// Request.Reasoning.Stream asks for them, and are reported as progress
// ([portico.Progress]) otherwise; server-tool blocks are read and left out
// of the answer. A request that is not streamed but whose max_tokens the
// SDK would refuse to send unstreamed (its expected time exceeds ten
// minutes: above about 21,333 tokens) is streamed without calling OnChunk.
//
// # Reasoning
//
// Request.Reasoning turns extended thinking on: thinking {"type":
// "enabled", "budget_tokens": Reasoning.Tokens(), at least 1024}, with
// max_tokens grown by the budget when MaxOutputTokens is 0. Thinking and
// redacted_thinking blocks become Response.Thoughts of [Dialect]
// "anthropic" (the thinking text, the signature; the redacted data as
// Signature) and are sent back, first in their assistant turn, from
// Message.Thoughts; other dialects' thoughts are left out. A request that
// answers tool calls of an assistant turn without a thinking block of this
// dialect (another provider's answer, after a fallback) is sent without
// thinking, as the API's error for it advises. Anthropic reports no
// reasoning token count apart: Usage.ReasoningTokens stays 0.
//
// # Answers
//
// Response.Text is the text blocks' text and Response.ToolCalls the tool_use
// blocks, in the order of the content. Text and tool inputs are passed on
// byte for byte as the provider sent them, invalid UTF-8 included, so that
// streamed chunks add up to Response.Text when a character is split across
// deltas. Stop reasons map to finish reasons: end_turn and stop_sequence to
// stop, max_tokens and model_context_window_exceeded to length, tool_use to
// tool_calls, refusal to content_filter; pause_turn (a server tool paused a
// long turn, to be sent back to continue) and any other value pass through
// unchanged (see [portico.FinishReason]).
//
// # Documents
//
// A document part ([portico.Media]) becomes a document block: a PDF by
// base64 data, URL or Files API file id (the request then carries
// anthropic-beta: files-api-2025-04-14), a plain-text document by its
// text or file id; Media.Name is the title
// (https://docs.claude.com/en/docs/build-with-claude/pdf-support). Audio,
// other document types and plain text by URL are refused before sending,
// as Incompatible: declare ModalityDocument, not ModalityAudio.
//
// # Prompt caching
//
// A cache breakpoint ([portico.CacheTTL]) on a part becomes cache_control
// {"type":"ephemeral"} on its block ({"ttl":"1h", ...} for Cache1h), and
// one on a message the same on the message's last block (the last of the
// system prompt for a system message; a tool result's block). The API
// takes at most 4 breakpoints and every one-hour breakpoint before the
// five-minute ones: a request otherwise is refused before sending, as
// Incompatible, since another provider may take it
// (https://docs.claude.com/en/docs/build-with-claude/prompt-caching).
//
// # Usage and cache tokens
//
// Anthropic's input_tokens counts only the input after the last cache
// breakpoint ("Total input tokens in a request is the summation of
// input_tokens, cache_creation_input_tokens, and cache_read_input_tokens",
// the SDK's Message.Usage). So Usage.InputTokens is the sum of the three, the
// whole prompt as portico counts it; Usage.CachedInputTokens is
// cache_read_input_tokens, the part served from the cache;
// Usage.CacheWriteTokens is cache_creation_input_tokens, and
// Usage.CacheWrite1hTokens its cache_creation.ephemeral_1h_input_tokens,
// priced apart (a 5-minute write costs 1.25 times the input price, a
// 1-hour write 2 times, a read 0.1 times:
// https://docs.claude.com/en/docs/build-with-claude/prompt-caching,
// "Pricing"). In a stream, message_start gives the input counts and the
// writes by TTL, message_delta the cumulative output (and revised input
// counts when it has them).
//
// The input-tokens-per-minute limit counts no cache reads ("for most
// Claude models, only uncached input tokens count towards your ITPM rate
// limits", https://docs.claude.com/en/api/rate-limits), so
// Usage.LimitExemptTokens is cache_read_input_tokens and a limiter above
// settles a call on the rest ([portico.Usage.Limited]); on the Claude 3
// models, whose limit the page marks as counting cache reads, it is 0.
//
// # One layer owns retries
//
// The SDK retries twice by default. [New] turns that off
// (option.WithMaxRetries(0), appended after the caller's options and again on
// every call), so that each Generate is exactly one HTTP request and the
// retry layer above (package retry) owns every retry and counts it against
// its budget.
//
// # Error classes
//
// Errors are classified before anyone acts on them. Every error is a
// [*portico.Error]; statuses and types are those of
// https://docs.claude.com/en/api/errors; a spend limit is told first, then
// the rows below in order, x-should-retry last:
//
//	529 overloaded_error, 500 api_error,        Transient, RetryAfter from retry-after
//	504 timeout_error, 408, 409, other 5xx
//	429 rate_limit_error                        RateLimited, RetryAfter from retry-after
//	429 enforced_spend_limit_reached or         Unusable: waiting does not help
//	contract_spend_limit_reached, 400 "credit
//	balance is too low" or "API usage limits"
//	401, 402, 403, 404, 400 "This               Unusable: this route's key, account or model
//	organization has been disabled."
//	413 request_too_large                       Incompatible
//	400 "prompt is too long: N tokens > M",     Incompatible, Reason "context window"
//	"input length and max_tokens exceed
//	context limit"
//	400 "max_tokens: N > M, which is the        Incompatible
//	maximum allowed number of output tokens"
//	other 400 invalid_request_error, 4xx        Incompatible: this provider refuses it,
//	(a system-only conversation, say)           another may not (an error event of
//	                                            another type inside a stream: Transient)
//	x-should-retry: true / false                such a refusal or Unusable made
//	                                            Transient; Transient or RateLimited
//	                                            made Incompatible (advice about the
//	                                            request: not retried, moves on),
//	                                            marked portico.ErrUnanswered: a breaker
//	                                            counts only a run of them (5 in a row)
//	error event inside an HTTP 200 stream,      as its type says (overloaded_error
//	or an error object as a 200 body            Transient, ...); after text reached
//	                                            OnChunk no layer above retries it
//	connection failed before the request        Transient
//	was written
//	timeout or reset after it was written       Ambiguous (it may have run and been billed)
//	a stream that ends inside an event          Ambiguous, wrapping io.ErrUnexpectedEOF
//	(cut mid-line, or an event without
//	its blank line)
//	no credentials anywhere                     Unusable (the API's 401, or the SDK's
//	                                            refusal when a named profile fails to load)
//	a 200 body that is not a message (JSON      InvalidResponse wrapping ErrMalformed
//	null, fields of the wrong type, no stop
//	reason, negative counts, data after the
//	message), a stream not
//	begun by message_start, with an event of
//	the wrong shape or without a stop reason
//	answer past Config.MaxResponseBytes         InvalidResponse wrapping ErrTooLarge
//	caller's ctx canceled / deadline            Canceled / Deadline
//	a layer's own timeout (ctx ended with       Ambiguous once written, else Transient
//	a cause matching portico.ErrLayerTimeout)
//
// "Context window" is the Reason package fallback reads to learn that the
// input needs a larger window than the failed route's. Error.Code is the
// error's details.error_code when it has one, else its type.
//
// The SDK's decoder is lenient (a number where a string belongs becomes its
// text); the adapter reads the raw JSON of every field it uses for its type,
// so a body of another shape is never taken for an answer.
//
// Whether the request was written comes from net/http/httptrace's
// WroteRequest, observed by an SDK middleware. A failure before it was
// written (a failed dial, a context done first, a client that refused to
// send it) has portico.Error.NotSent set, so a rate limiter gives the
// call's whole reservation back. HTTP errors and error events
// wrap a [*ProviderError] (status, type, error code), which wraps the SDK's
// *anthropic.Error. The API may echo the prompt in its error messages, so
// the message is left out of errors unless [Config.IncludeProviderMessage]
// is set.
//
// # Bounds
//
// A hostile or broken server cannot make one call hold unbounded memory or
// run past its context: every response body (an answer, an HTTP error, a
// whole event stream) is cut at [Config.MaxResponseBytes], 64 MiB by
// default (a larger Content-Length is refused before a byte is read, and a
// body of unknown length is read in blocks, so refusing it costs the limit
// once), a streamed message has at most 1024 content blocks, and the SDK
// reads under the caller's context.
//
// # Rate-limit headers
//
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
// remaining,reset} are parsed by [ParseRateLimit] into [portico.RateLimit]
// (Requests, Tokens, InputTokens, OutputTokens) on Response.RateLimit and
// Error.RateLimit, for package ratelimit to adopt the provider's view;
// resets are RFC 3339 times, read relative to the clock. [ParseRetryAfter]
// and [ParseReset] are the parsers, pure and fuzzed.
//
// # Tracing
//
// The SDK makes an OpenTelemetry span per call through the registered tracer
// provider, without content by default; option.WithoutOpenTelemetry turns
// it off where package trace's spans suffice.
package anthropic
