package fakeopenai

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
	// Handler, when non-nil, answers every request instead of the fake's
	// models, over the same loopback or in-memory server: the request is
	// still recorded (Requests, Count, OnRequest) with its model and stream
	// flag when its body is a chat completion. Tests use it for answers no
	// Fault describes. Nil means the fake answers.
	Handler http.Handler
}

// DefaultRecordLimit is the number of requests a Server records when
// Config.RecordLimit is zero.
const DefaultRecordLimit = fakecore.DefaultRecordLimit

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
	// ThinkEvery, when positive, makes a streamed answer reason while it
	// waits its TTFT, as an OpenAI-compatible reasoning server does: a
	// chunk whose delta carries only ReasoningField at once and every
	// ThinkEvery until TTFT has passed, before the role delta. Zero means
	// no reasoning.
	ThinkEvery time.Duration
	// ReasoningField names the delta's reasoning field: "reasoning_content"
	// (DeepSeek, vLLM, SGLang, llama.cpp) or "reasoning" (OpenRouter,
	// Ollama). Empty means "reasoning_content".
	ReasoningField string
	// ReasoningTokens is reported as usage.completion_tokens_details.
	// reasoning_tokens, and counted in completion_tokens, as OpenAI's
	// reasoning models report the tokens they thought in
	// (https://platform.openai.com/docs/guides/reasoning). A non-streamed
	// answer then also carries its reasoning text in ReasoningField, as an
	// OpenAI-compatible reasoning server's message does. Zero means none.
	ReasoningTokens int
	// KeepAliveEvery, when positive (and ThinkEvery zero), makes a streamed
	// answer send only SSE comments (": keep-alive", as OpenRouter's
	// ": OPENROUTER PROCESSING") while it waits its TTFT. Zero means none.
	KeepAliveEvery time.Duration
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
	// Prefill makes the model continue a trailing assistant message (a
	// prefill), as llama.cpp's server does; without it the model continues
	// one only when the request asks with "continue_final_message": true
	// (vLLM, SGLang, TGI) or the message's "prefix": true (DeepSeek,
	// Mistral), and otherwise answers anew, as OpenAI's API does. A
	// continued answer is the rest of the answer to the conversation before
	// that message when the message is its start, and otherwise new words,
	// so that the answer has OutputTokens words in all. The model always
	// continues an assistant message followed by portico.ContinueInstruction.
	Prefill bool
	// RateLimit, when non-nil, makes every response of this model carry
	// OpenAI's x-ratelimit-* headers computed from it.
	RateLimit *RateLimit
	// Faults are injected on a fraction of requests each; see [Fault]. For every
	// request one uniform draw u in [0,1) from the seeded generator picks the
	// first fault whose cumulative Fraction exceeds u, or none. The fractions
	// should sum to at most 1.
	Faults []Fault
	// Script, when non-empty, decides the model's first len(Script)
	// requests in order of arrival: request i gets Script[i] (a zero Fault
	// answers normally; Fraction is ignored), and later requests draw from
	// Faults. Nil means every request draws.
	Script []Fault
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

// FaultKind names a fault the server injects; the constants below are its
// values. It is the same type in every fake of package modeltest.
type FaultKind = fakecore.FaultKind

// The faults. Each documents how it looks on the wire; [Fault] fields refine it.
const (
	// NoFault is the zero FaultKind: a normal answer.
	NoFault = fakecore.NoFault
	// FaultStatus answers Fault.Status (default 500) with an OpenAI error body
	// ({"error":{"message","type","param","code"}}), or Fault.Body, and the
	// retry-after, x-should-retry and Fault.Header headers.
	FaultStatus = fakecore.FaultStatus
	// FaultContextLength answers 400 with code context_length_exceeded, like a
	// prompt longer than the context window.
	FaultContextLength = fakecore.FaultContextLength
	// FaultStallBeforeHeaders waits Fault.Stall before writing anything (zero:
	// until the client goes away or the server closes), then answers normally.
	FaultStallBeforeHeaders = fakecore.FaultStallBeforeHeaders
	// FaultStallMidStream writes the headers and Fault.AfterChunks chunks (a
	// non-streamed answer: the first half of its body), then stalls like
	// FaultStallBeforeHeaders, then finishes normally.
	FaultStallMidStream = fakecore.FaultStallMidStream
	// FaultMalformed answers 200 with a body that is not valid JSON (streamed:
	// a malformed data event after Fault.AfterChunks chunks).
	FaultMalformed = fakecore.FaultMalformed
	// FaultStreamError sends, inside an HTTP 200 event stream, Fault.AfterChunks
	// chunks and then an error event: Fault.Body, or {"error":{...}} with
	// Fault.Code (default "overloaded"; "context_length_exceeded" stands for a
	// prompt too long), named Fault.Event when set. A non-streamed request
	// gets the status the code stands for instead (503 or 400).
	FaultStreamError = fakecore.FaultStreamError
	// FaultTruncate ends the answer after Fault.AfterChunks tokens (at least 1)
	// with finish_reason "length".
	FaultTruncate = fakecore.FaultTruncate
	// FaultDisconnect drops the connection after Fault.AfterChunks chunks
	// (non-streamed: before the headers), after the request was read.
	FaultDisconnect = fakecore.FaultDisconnect
)

// Fault is what happens to one request: drawn for a fraction of a model's
// requests (ModelConfig.Faults) or played in order (ModelConfig.Script). Its
// fields: Kind; Fraction (drawn faults only); Status (FaultStatus, default
// 500; below 400 only with a Body); Code, Type and Message of the error
// object (empty: the status's usual ones, e.g. 429 "rate_limit_exceeded",
// 404 "model_not_found", 401 "invalid_api_key"); RetryAfter (a Duration,
// sent in whole seconds or, with RetryAfterDate, as an HTTP-date),
// RetryAfterMsHeader and ShouldRetry headers;
// Header, set last so it can send any value, malformed ones included; Body,
// sent verbatim instead of the error object or error event; Event, the
// error event's name; AfterChunks, the chunks sent before a mid-stream
// fault; Stall, how long a stall lasts (zero: until the client goes away).
// It is the same type in every fake of package modeltest.
type Fault = fakecore.Fault
