package fakegemini

import (
	"net/http"
	"time"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// Config describes a fake server: its models and the seed of its faults.
// The zero Config serves one model, [DefaultModel], with no latency and no
// faults, to any API key.
type Config struct {
	// Seed makes fault selection and answers deterministic: the same Seed,
	// models and order of arrival give the same faults. Zero is a valid seed.
	Seed uint64
	// Models are the models served, by name ("gemini-2.5-flash", without the
	// "models/" prefix). Empty means one ModelConfig named [DefaultModel]
	// with zero values. Requests for other names get Google's 404 NOT_FOUND.
	Models []ModelConfig
	// APIKey, when non-empty, is the only key accepted (the x-goog-api-key
	// header or the key query parameter): any other gets the Gemini API's 400
	// INVALID_ARGUMENT with ErrorInfo reason API_KEY_INVALID. Empty accepts
	// any key or none.
	APIKey string
	// OnRequest, when non-nil, is called with each recorded request once it is
	// read and its fault drawn, before it is answered, on the request's
	// goroutine. Nil means no hook.
	OnRequest func(Request)
	// RecordLimit bounds the requests kept for [Server.Requests]: past it the
	// server keeps counting (Count) but records no more. Zero means
	// DefaultRecordLimit; negative records nothing.
	RecordLimit int
	// Handler, when non-nil, answers every request instead of the fake's
	// models, on the same server, after the request is recorded. Tests use
	// it for answers no Fault or ModelConfig describes. Nil means the fake
	// answers.
	Handler http.Handler
}

// DefaultRecordLimit is the number of requests a Server records when
// Config.RecordLimit is zero.
const DefaultRecordLimit = fakecore.DefaultRecordLimit

// DefaultModel is the name of the model served when Config.Models is empty.
const DefaultModel = "fake-gemini"

// ModelConfig describes one served model: its speed, its answers and its
// faults. Every field's zero value means "instant" or "none".
type ModelConfig struct {
	// Name is the model name clients ask for; it is echoed as modelVersion.
	// Empty means DefaultModel.
	Name string
	// Latency is waited before the response headers, on every request.
	Latency time.Duration
	// Jitter adds to Latency a uniform random wait in [0, Jitter), drawn from
	// the seeded generator.
	Jitter time.Duration
	// TTFT is the time from the headers to the first token of a streamed
	// answer; a non-streamed answer waits it too before its body.
	TTFT time.Duration
	// TokensPerSecond is the pace after the first token: a stream waits
	// 1/TokensPerSecond between chunks, a whole answer (n-1)/TokensPerSecond
	// for n tokens. Zero means instant.
	TokensPerSecond float64
	// ThinkEvery, when positive, makes a streamed answer think while it
	// waits its TTFT, as a Gemini thinking model asked for its thoughts
	// (thinkingConfig.includeThoughts) does: an event whose part is a
	// thought ({"text": ..., "thought": true}) at once and every ThinkEvery
	// until TTFT has passed. Zero means no thoughts.
	ThinkEvery time.Duration
	// KeepAliveEvery, when positive (and ThinkEvery zero), makes a streamed
	// answer send only SSE comments (": keep-alive") while it waits its
	// TTFT, as a proxy in front of the API may. Zero means none.
	KeepAliveEvery time.Duration
	// OutputTokens is the length of a text answer in tokens (one lorem word,
	// one streamed chunk), before generationConfig.maxOutputTokens cuts it.
	// Zero means 8.
	OutputTokens int
	// ContextWindow, when positive, is the most input tokens accepted: longer
	// prompts get the Gemini API's 400 INVALID_ARGUMENT "The input token count
	// (N) exceeds the maximum number of tokens allowed (M).". Input tokens are
	// counted as the words of text parts plus 3 per content (the system
	// instruction is one). Zero means unlimited.
	ContextWindow int
	// CachedInputTokens is reported as usageMetadata.cachedContentTokenCount
	// (clamped to [0, input tokens]).
	CachedInputTokens int
	// ThoughtsTokens is reported as usageMetadata.thoughtsTokenCount, as a
	// thinking model reports tokens it thought but did not answer.
	ThoughtsTokens int
	// ToolCalls makes the model call a function (the first of
	// toolConfig.functionCallingConfig.allowedFunctionNames, else the first
	// declared) whenever the request declares functions and its last content
	// is not function responses. Without it the model calls one only when the
	// functionCallingConfig mode is ANY. Mode NONE never calls.
	ToolCalls bool
	// ToolRounds is how many rounds of function responses the model takes
	// before it answers in text: after fewer, it calls functions again.
	// Zero means 1: the model answers the first responses.
	ToolRounds int
	// ParallelToolCalls is how many function calls the model makes at once:
	// the chosen function, then the declared ones after it in turn. Streamed,
	// each call is one chunk, as Gemini sends them. Zero or 1 means one; at
	// most 128.
	ParallelToolCalls int
	// CallIDs gives each function call an "id", as Vertex AI and newer
	// models do; without it calls carry only a name, as the Gemini API's
	// older models send them.
	CallIDs bool
	// ThoughtSignatures adds a thoughtSignature to the first function call
	// part, or to the last part of a text answer, as Gemini 3 models do;
	// the request must then send a call's back with that call, or get a
	// 400 INVALID_ARGUMENT (as for a signature the fake did not make for
	// that call).
	ThoughtSignatures bool
	// FinishReason, when non-empty, is the finish reason of every complete
	// answer ("SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL", ...)
	// instead of STOP. MAX_TOKENS still comes when maxOutputTokens cuts.
	FinishReason string
	// BlockReason, when non-empty, blocks every prompt: the answer is HTTP
	// 200 with promptFeedback.blockReason set to it ("SAFETY", "OTHER",
	// "BLOCKLIST", "PROHIBITED_CONTENT") and no candidates, streamed or not.
	BlockReason string
	// Faults are injected on a fraction of requests each; see [Fault]. For
	// every request one uniform draw u in [0,1) from the seeded generator
	// picks the first fault whose cumulative Fraction exceeds u, or none.
	Faults []Fault
	// Script, when non-empty, decides the model's first len(Script) requests
	// in order of arrival: request i gets Script[i] (a zero Fault answers
	// normally; Fraction is ignored), and later requests draw from Faults.
	Script []Fault
}

// FaultKind names a fault the server injects; the constants below are its
// values. It is the same type in every fake of package modeltest.
type FaultKind = fakecore.FaultKind

// The faults, as they look on the Gemini API's wire; [Fault] fields refine
// them.
const (
	// NoFault is the zero FaultKind: a normal answer.
	NoFault = fakecore.NoFault
	// FaultStatus answers Fault.Status (default 500) with Google's error
	// body, {"error":{"code","message","status","details"}} (see [Fault]),
	// or Fault.Body verbatim.
	FaultStatus = fakecore.FaultStatus
	// FaultContextLength answers 400 INVALID_ARGUMENT "The input token count
	// (N) exceeds the maximum number of tokens allowed (M).".
	FaultContextLength = fakecore.FaultContextLength
	// FaultStallBeforeHeaders waits Fault.Stall before writing anything
	// (zero: until the client goes away or the server closes), then answers.
	FaultStallBeforeHeaders = fakecore.FaultStallBeforeHeaders
	// FaultStallMidStream writes the headers and Fault.AfterChunks chunks (a
	// non-streamed answer: the first half of its body), then stalls like
	// FaultStallBeforeHeaders, then finishes.
	FaultStallMidStream = fakecore.FaultStallMidStream
	// FaultMalformed answers 200 with a body that is not valid JSON
	// (streamed: a malformed data event after Fault.AfterChunks chunks).
	FaultMalformed = fakecore.FaultMalformed
	// FaultStreamError sends, inside an HTTP 200 event stream,
	// Fault.AfterChunks chunks and then a data event holding Google's error
	// object, {"error":{...}}, of status Fault.Code (default UNAVAILABLE,
	// code 503), or Fault.Body. A non-streamed request gets that status as
	// an HTTP error instead.
	FaultStreamError = fakecore.FaultStreamError
	// FaultTruncate ends the answer after Fault.AfterChunks tokens (at least
	// 1) with finishReason MAX_TOKENS.
	FaultTruncate = fakecore.FaultTruncate
	// FaultDisconnect drops the connection after Fault.AfterChunks chunks
	// (non-streamed: before the headers), after the request was read.
	FaultDisconnect = fakecore.FaultDisconnect
)

// Fault is what happens to one request: drawn for a fraction of a model's
// requests (ModelConfig.Faults) or played in order (ModelConfig.Script). It
// is the same type in every fake of package modeltest; on the Gemini wire
// its fields mean: Status, the HTTP status and the error's "code"; Code,
// the error's "status" (empty: the google.rpc.Code name of the HTTP status,
// "RESOURCE_EXHAUSTED" for 429); Type, when set, the reason of a
// google.rpc.ErrorInfo detail ("API_KEY_INVALID"); Message, the error's
// "message" (empty: Google's usual one); RetryAfter, the retryDelay of a
// google.rpc.RetryInfo detail in the body ("37s"), not a header, as Google
// sends it (a 429 also carries a QuotaFailure and a Help detail);
// RetryAfterMsHeader and ShouldRetry, headers Gemini never sends; Header, set
// last; Body, sent verbatim instead of the error object; AfterChunks, the
// chunks sent before a mid-stream fault; Stall, how long a stall lasts.
type Fault = fakecore.Fault

// Request is what the server recorded of one request: Model (the name in
// the path, without "models/"), Stream (streamGenerateContent), Traceparent,
// Fault and Body. It is the same type in every fake of package modeltest.
type Request = fakecore.Request
