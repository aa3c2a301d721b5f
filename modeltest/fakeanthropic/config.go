package fakeanthropic

import (
	"net/http"
	"time"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// Config describes a fake server: its models and the seed of its faults.
// The zero Config serves one model, [DefaultModel], with no latency and no
// faults.
type Config struct {
	// Seed makes fault selection deterministic: the same Seed, models and order
	// of arrival give the same faults and answers. Zero is a valid seed.
	Seed uint64
	// Models are the models served, by name. Empty means one ModelConfig named
	// [DefaultModel] with zero values. Requests for other names get
	// Anthropic's 404 not_found_error.
	Models []ModelConfig
	// OnRequest, when non-nil, is called with each recorded request once it is
	// read and its fault drawn, before it is answered, on the request's
	// goroutine (concurrently for concurrent requests). Nil means no hook.
	OnRequest func(Request)
	// RecordLimit bounds the requests kept for [Server.Requests]: past it the
	// server keeps counting (Count) but records no more. Zero means
	// DefaultRecordLimit; negative records nothing.
	RecordLimit int
	// Handler, when non-nil, answers every request instead of the fake's
	// models, over the same loopback or in-memory server: the request is
	// still recorded (Requests, Count, OnRequest) with its model and stream
	// flag when its body is a Messages request. Nil means the fake answers.
	Handler http.Handler
}

// DefaultRecordLimit is the number of requests a Server records when
// Config.RecordLimit is zero.
const DefaultRecordLimit = fakecore.DefaultRecordLimit

// DefaultModel is the name of the model served when Config.Models is empty.
const DefaultModel = "fake-claude"

// ModelConfig describes one served model: its speed, its answers, its limits
// and its faults. Every field's zero value means "instant" or "none".
type ModelConfig struct {
	// Name is the model name clients ask for; it is echoed in answers.
	// Empty means DefaultModel.
	Name string
	// Latency is waited before the response headers are written, on every
	// request. Zero means none.
	Latency time.Duration
	// Jitter adds to Latency a uniform random wait in [0, Jitter), drawn from
	// the seeded generator. Zero means none.
	Jitter time.Duration
	// TTFT is the time from the headers to the first token of a streamed
	// answer; a non-streamed answer waits it too before its body. Zero means
	// none.
	TTFT time.Duration
	// TokensPerSecond is the generation speed after the first token: a
	// streamed answer waits 1/TokensPerSecond between tokens, a non-streamed
	// one (n-1)/TokensPerSecond for n tokens. Zero means instant.
	TokensPerSecond float64
	// ThinkEvery, when positive, makes a streamed answer think while it
	// waits its TTFT, as a model with extended thinking does: after
	// message_start, a thinking block (content_block_start of type
	// "thinking", a thinking_delta at once and every ThinkEvery until TTFT
	// has passed, a signature_delta, content_block_stop) before the answer's
	// blocks. Zero means no thinking.
	ThinkEvery time.Duration
	// RedactThinking sends the answer's thinking as a redacted_thinking
	// block (its data opaque) instead of a thinking block, as the API does
	// when its safety systems flag the reasoning. False sends thinking.
	RedactThinking bool
	// PingEvery, when positive (and ThinkEvery zero), makes a streamed
	// answer send only ping events ("event: ping") while it waits its TTFT,
	// before message_start. Zero means none.
	PingEvery time.Duration
	// OutputTokens is the length of a text answer, in tokens (one lorem word
	// is one token), before max_tokens or a stop sequence cuts it. Zero means
	// 8.
	OutputTokens int
	// ContextWindow, when positive, is the most input tokens accepted: longer
	// prompts get a 400 invalid_request_error "prompt is too long: N tokens >
	// M maximum". Input tokens are counted as words (system prompt, text
	// blocks and tool results) plus 3 per message. Zero means unlimited.
	ContextWindow int
	// MaxOutputTokens, when positive, is the model's ceiling on max_tokens: a
	// request above it gets a 400 "max_tokens: N > M, which is the maximum
	// allowed number of output tokens for MODEL". Zero means no ceiling.
	MaxOutputTokens int
	// CacheReadInputTokens and CacheWriteInputTokens are the parts of the
	// input reported as cache_read_input_tokens and
	// cache_creation_input_tokens (together clamped to the input); the rest
	// is input_tokens, as the API counts them. Zero means none.
	// CacheWrite1hInputTokens is the part of the writes reported as
	// cache_creation.ephemeral_1h_input_tokens (clamped to them), the rest
	// as ephemeral_5m_input_tokens.
	CacheReadInputTokens    int
	CacheWriteInputTokens   int
	CacheWrite1hInputTokens int
	// PromptCache makes the model cache prompts as the API does, from the
	// request's cache_control breakpoints (tools, system, then messages;
	// TTL "5m" by default or "1h"; a hit refreshes the entry), and report
	// its reads and writes in place of the three fields above; the
	// anthropic-ratelimit-input-tokens headers then leave out the reads, as
	// the API's ITPM limit does. MinCacheTokens is the shortest prefix
	// cached, zero meaning [DefaultMinCacheTokens].
	PromptCache    bool
	MinCacheTokens int
	// ToolCalls makes the model call a tool (the one tool_choice names, else
	// the first) whenever the request declares tools and the last message
	// is not tool results. Without it the model calls a tool only when
	// tool_choice is "any" or names a tool.
	ToolCalls bool
	// ToolRounds is how many rounds of tool results the model takes
	// before it answers in text: after fewer, it calls tools again. Zero
	// means 1: the model answers the first tool results.
	ToolRounds int
	// ParallelToolCalls is how many tool_use blocks the model answers at
	// once when it calls tools: the chosen tool, then the declared tools
	// after it in turn, each with its own id and input. A request whose
	// tool_choice has disable_parallel_tool_use, or names a tool, gets one.
	// Zero or 1 means one; at most 128 are made.
	ParallelToolCalls int
	// RateLimit, when non-nil, makes every response of this model carry
	// Anthropic's anthropic-ratelimit-* headers computed from it.
	RateLimit *RateLimit
	// Faults are injected on a fraction of requests each; see [Fault]. For
	// every request one uniform draw u in [0,1) from the seeded generator
	// picks the first fault whose cumulative Fraction exceeds u, or none.
	Faults []Fault
	// Script, when non-empty, decides the model's first len(Script) requests
	// in order of arrival: request i gets Script[i] (a zero Fault answers
	// normally); later requests draw from Faults. A 529 then a 200 is
	// Script: []Fault{{Kind: FaultStatus, Status: 529}, {}}.
	Script []Fault
}

// RateLimit configures the anthropic-ratelimit-* headers a model sends:
// requests, input tokens and output tokens are separate limits per Window,
// as Anthropic's RPM, ITPM and OTPM are. Remaining counts are computed over
// fixed windows counted from the server's start, so they are deterministic
// for a given order of arrival; each reset is the end of its window, as an
// RFC 3339 time rounded up to the second.
type RateLimit struct {
	// Requests is sent as anthropic-ratelimit-requests-limit; zero omits the
	// request headers.
	Requests int
	// InputTokens is sent as anthropic-ratelimit-input-tokens-limit (a
	// request counts its input tokens); zero omits those headers.
	InputTokens int
	// OutputTokens is sent as anthropic-ratelimit-output-tokens-limit (a
	// request counts the output tokens of its answer); zero omits those
	// headers.
	OutputTokens int
	// Window is the period of every limit. Zero means one minute.
	Window time.Duration
	// Enforce answers 429 rate_limit_error, with retry-after in whole seconds
	// until the window resets, to a request that would exceed a limit, as
	// Anthropic does; the refused request is not counted. False only
	// announces the limits.
	Enforce bool
}

// FaultKind names a fault the server injects; every fake of package
// modeltest shares the vocabulary.
type FaultKind = fakecore.FaultKind

// The faults, as this server renders them on Anthropic's wire.
const (
	// NoFault is the zero FaultKind: a normal answer.
	NoFault = fakecore.NoFault
	// FaultStatus answers Fault.Status (default 500) with Anthropic's error
	// body, {"type":"error","error":{"type","message"[,"details":{"error_code"}]},
	// "request_id"}: type from Fault.Type, else the status's own
	// (invalid_request_error, authentication_error, billing_error,
	// permission_error, not_found_error, request_too_large,
	// rate_limit_error, api_error, timeout_error, overloaded_error for 529),
	// error_code from Fault.Code, and the retry-after, x-should-retry and
	// Fault.Header headers.
	FaultStatus = fakecore.FaultStatus
	// FaultContextLength answers 400 invalid_request_error "prompt is too
	// long: N tokens > M maximum".
	FaultContextLength = fakecore.FaultContextLength
	// FaultStallBeforeHeaders waits Fault.Stall before writing anything (zero:
	// until the client goes away or the server closes), then answers.
	FaultStallBeforeHeaders = fakecore.FaultStallBeforeHeaders
	// FaultStallMidStream sends Fault.AfterChunks content deltas (a
	// non-streamed answer: the first half of its body), then stalls like
	// FaultStallBeforeHeaders, then finishes.
	FaultStallMidStream = fakecore.FaultStallMidStream
	// FaultMalformed answers 200 with the first half of the message's JSON
	// (streamed: a content_block_delta event whose data is cut, after
	// Fault.AfterChunks deltas).
	FaultMalformed = fakecore.FaultMalformed
	// FaultStreamError sends, inside the HTTP 200 event stream, message_start
	// and Fault.AfterChunks content deltas, then an "event: error" whose data
	// is {"type":"error","error":{"type":T,"message":M}}: T is Fault.Type,
	// default overloaded_error; invalid_request_error's default message is
	// "prompt is too long". Fault.Event renames the event, Fault.Body replaces
	// the data. A non-streamed request gets the status T stands for instead
	// (529, 400, 500, ...).
	FaultStreamError = fakecore.FaultStreamError
	// FaultTruncate ends the answer after Fault.AfterChunks tokens (at least
	// 1) with stop_reason "max_tokens".
	FaultTruncate = fakecore.FaultTruncate
	// FaultDisconnect drops the connection after Fault.AfterChunks content
	// deltas (non-streamed: before the headers), after the request was read.
	FaultDisconnect = fakecore.FaultDisconnect
)

// Fault is what happens to one request: drawn for a fraction of a model's
// requests (ModelConfig.Faults) or played in order (ModelConfig.Script).
// Its fields are described at [FaultKind]'s constants; Code is
// error.details.error_code, RetryAfterMS is sent as retry-after-ms (a
// header Anthropic does not send). The zero Fault is a normal answer.
type Fault = fakecore.Fault

// Request is what the server recorded of one request to /v1/messages: Model,
// Stream, Traceparent, Fault (the kind injected) and Body (as received). It
// is the same type in every fake of package modeltest.
type Request = fakecore.Request
