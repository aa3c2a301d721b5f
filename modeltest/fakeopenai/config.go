package fakeopenai

import (
	"strconv"
	"time"
)

// Config describes a fake server: its models and the seed of its faults.
// The zero Config serves one model, [DefaultModel], with no latency and no
// faults.
type Config struct {
	// Seed makes fault selection deterministic: the same Seed, models and order
	// of arrival give the same faults. Zero is a valid seed.
	Seed uint64
	// Models are the models served, by name. Empty means one ModelConfig named
	// [DefaultModel] with zero values. Requests for other names get OpenAI's 404
	// model_not_found error.
	Models []ModelConfig
	// OnRequest, when non-nil, is called with each recorded request once it is
	// read and its fault drawn, before it is answered, on the request's
	// goroutine (concurrently for concurrent requests). Tests use it to know
	// that a request reached the server. Nil means no hook.
	OnRequest func(Request)
	// RecordLimit bounds the requests kept for [Server.Requests]: past it the
	// server keeps counting (Count) but records no more, so a long soak run does
	// not grow memory without bound. Zero means DefaultRecordLimit; negative
	// records nothing.
	RecordLimit int
}

// DefaultRecordLimit is the number of requests a Server records when
// Config.RecordLimit is zero.
const DefaultRecordLimit = 10000

// DefaultModel is the name of the model served when Config.Models is empty.
const DefaultModel = "fake-model"

// ModelConfig describes one served model: its speed, its answers and its faults.
// Every field's zero value means "instant" or "none".
type ModelConfig struct {
	// Name is the model name clients ask for; it is echoed in answers.
	// Empty means DefaultModel.
	Name string
	// Latency is waited before the response headers are written, on every
	// request (queueing and network). Zero means none.
	Latency time.Duration
	// Jitter adds to Latency a uniform random wait in [0, Jitter), drawn from
	// the seeded generator, so latencies have a spread. Zero means none.
	Jitter time.Duration
	// TTFT is the time from the headers to the first token of a streamed
	// answer; a non-streamed answer waits it too before its body. Zero means none.
	TTFT time.Duration
	// TokensPerSecond is the generation speed after the first token: a streamed
	// answer waits 1/TokensPerSecond between tokens, and a non-streamed one waits
	// (n-1)/TokensPerSecond for n tokens. Zero means instant.
	TokensPerSecond float64
	// OutputTokens is the length of a text answer, in tokens (one lorem word is
	// one token), before the request's max_tokens cuts it. Zero means 8.
	OutputTokens int
	// ContextWindow, when positive, is the most input tokens accepted: longer
	// prompts get a 400 with code context_length_exceeded. Input tokens are
	// counted as words plus 3 per message. Zero means unlimited.
	ContextWindow int
	// CachedInputTokens is reported as usage.prompt_tokens_details.cached_tokens
	// (clamped to [0, input tokens]). Zero means none.
	CachedInputTokens int
	// ToolCalls makes the model call a tool (the one tool_choice names, else the
	// first) whenever the request declares tools and the last message is not a
	// tool result. Without it the model calls a tool only when tool_choice is
	// "required" or names a function.
	ToolCalls bool
	// ParallelToolCalls is how many tool calls the model makes at once when
	// it calls tools (OpenAI's parallel tool calls): the chosen tool, then the
	// declared tools after it in turn, wrapping around, each with its own id
	// and arguments. Streamed, each call's deltas follow the previous call's,
	// indexed 0, 1, ..., as OpenAI sends them. A request with
	// "parallel_tool_calls": false, or whose tool_choice names a function,
	// gets one call. Zero or 1 means one call; at most 128 are made.
	ParallelToolCalls int
	// RateLimit, when non-nil, makes every response of this model carry
	// OpenAI's x-ratelimit-* headers computed from it.
	RateLimit *RateLimit
	// Faults are injected on a fraction of requests each; see [Fault]. For every
	// request one uniform draw u in [0,1) from the seeded generator picks the
	// first fault whose cumulative Fraction exceeds u, or none. The fractions
	// should sum to at most 1.
	Faults []Fault
}

// RateLimit configures the x-ratelimit-* headers a model sends. Remaining
// counts are computed over fixed windows of the Reset durations, counted from
// the server's start, so they are deterministic for a given order of arrival.
type RateLimit struct {
	// Requests is sent as x-ratelimit-limit-requests; zero omits the request
	// headers.
	Requests int
	// Tokens is sent as x-ratelimit-limit-tokens (input plus output tokens per
	// window); zero omits the token headers.
	Tokens int
	// ResetRequests is the request window, sent as x-ratelimit-reset-requests in
	// OpenAI's format ("1s", "6m0s", "20ms"). Zero means one minute.
	ResetRequests time.Duration
	// ResetTokens is the token window, sent as x-ratelimit-reset-tokens. Zero
	// means one minute.
	ResetTokens time.Duration
	// Enforce answers 429 (code rate_limit_exceeded, type "requests" or
	// "tokens", retry-after-ms until the window resets) to a request that
	// would exceed the window's Requests or Tokens, as OpenAI does; the
	// refused request is not counted. False only announces the limits.
	Enforce bool
}

// FaultKind names a fault the server injects.
type FaultKind uint8

// The faults. Each documents how it looks on the wire; [Fault] fields refine it.
const (
	// NoFault is the zero FaultKind: a normal answer.
	NoFault FaultKind = iota
	// FaultStatus answers Fault.Status (default 500) with an OpenAI error body
	// ({"error":{"message","type","param","code"}}) and the Retry-After,
	// x-should-retry headers the Fault asks for.
	FaultStatus
	// FaultContextLength answers 400 with code context_length_exceeded, like a
	// prompt longer than the context window.
	FaultContextLength
	// FaultStallBeforeHeaders waits Fault.Stall before writing anything (zero:
	// until the client goes away or the server closes), then answers normally.
	FaultStallBeforeHeaders
	// FaultStallMidStream writes the headers and Fault.AfterChunks chunks (a
	// non-streamed answer: the first half of its body), then stalls like
	// FaultStallBeforeHeaders, then finishes normally.
	FaultStallMidStream
	// FaultMalformed answers 200 with a body that is not valid JSON (streamed:
	// a malformed data event after Fault.AfterChunks chunks).
	FaultMalformed
	// FaultStreamError sends, inside an HTTP 200 event stream, Fault.AfterChunks
	// chunks and then an error event {"error":{...}} with Fault.Code (default
	// "overloaded"; "context_length_exceeded" stands for a prompt too long).
	// A non-streamed request gets the status the code stands for instead (503
	// or 400).
	FaultStreamError
	// FaultTruncate ends the answer after Fault.AfterChunks tokens (at least 1)
	// with finish_reason "length".
	FaultTruncate
	// FaultDisconnect drops the connection after Fault.AfterChunks chunks
	// (non-streamed: before the headers), after the request was read.
	FaultDisconnect
)

var faultNames = [...]string{
	NoFault:                 "none",
	FaultStatus:             "status",
	FaultContextLength:      "context_length",
	FaultStallBeforeHeaders: "stall_before_headers",
	FaultStallMidStream:     "stall_mid_stream",
	FaultMalformed:          "malformed",
	FaultStreamError:        "stream_error",
	FaultTruncate:           "truncate",
	FaultDisconnect:         "disconnect",
}

// String returns the fault's snake_case name ("stall_mid_stream").
func (k FaultKind) String() string {
	if int(k) < len(faultNames) {
		return faultNames[k]
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// Fault is one kind of failure injected on a fraction of a model's requests.
type Fault struct {
	// Kind says what fails.
	Kind FaultKind
	// Fraction is the share of requests that get this fault, in [0, 1].
	Fraction float64
	// Status is the HTTP status of FaultStatus. Zero means 500.
	Status int
	// Code is the error's "code" field. Zero means the status's usual code
	// (429: "rate_limit_exceeded", 404: "model_not_found", 401:
	// "invalid_api_key", FaultStreamError: "overloaded", otherwise null).
	Code string
	// Type is the error's "type" field. Empty means the usual type for the
	// status ("invalid_request_error", "requests", "server_error", ...).
	Type string
	// Message is the error's "message" field. Empty means a fixed description.
	// Tests put prompt-like text here to check that adapters keep it out of
	// their error strings.
	Message string
	// RetryAfter, when positive, is sent as a retry-after header in whole
	// seconds (rounded up), or as an HTTP-date when RetryAfterDate is set.
	RetryAfter time.Duration
	// RetryAfterDate sends RetryAfter as an HTTP-date (RFC 9110) instead of
	// seconds.
	RetryAfterDate bool
	// RetryAfterMS, when positive, is sent as a retry-after-ms header in
	// milliseconds.
	RetryAfterMS time.Duration
	// ShouldRetry, when "true" or "false", is sent as the x-should-retry header.
	ShouldRetry string
	// AfterChunks is how many content chunks (tokens) are sent before a
	// mid-stream fault strikes. Zero means at once.
	AfterChunks int
	// Stall is how long a stall lasts. Zero means until the client goes away or
	// the server closes.
	Stall time.Duration
}
