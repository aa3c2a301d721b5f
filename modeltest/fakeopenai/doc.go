// Package fakeopenai is an OpenAI-compatible chat-completions server for tests
// and examples: it answers POST /v1/chat/completions (and OpenAI's Responses
// API, POST /v1/responses) as JSON or as a stream of
// server-sent events, from several models each with its own latency, time to
// first token and generation speed, and it injects faults on a chosen fraction
// of requests, deterministically from a seed.
//
// # Starting it
//
// [Start] binds 127.0.0.1 on a free port (an [net/http/httptest.Server]);
// point an SDK at [Server.BaseURL]. [StartPipe] serves the same handler over
// in-memory connections (net.Pipe) for tests inside a testing/synctest bubble,
// where every latency and stall passes in virtual time; reach it through
// [Server.Client]. [New] gives the bare [Server.Handler] to serve yourself.
// [Server.Close] ends every stall and waits for the server's goroutines.
//
//	s, err := fakeopenai.Start(fakeopenai.Config{Seed: 1, Models: []fakeopenai.ModelConfig{{
//		Name: "flaky", TTFT: 20 * time.Millisecond, TokensPerSecond: 200,
//		Faults: []fakeopenai.Fault{
//			{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfterMsHeader: 50 * time.Millisecond, Fraction: 0.1},
//			{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 0.05},
//			{Kind: fakeopenai.FaultStallMidStream, AfterChunks: 3, Fraction: 0.02},
//		},
//	}}})
//	defer s.Close()
//	client := openai.NewClient(option.WithBaseURL(s.BaseURL()), option.WithAPIKey("x"))
//
// # What it answers
//
// Answers are deterministic functions of the seed, the model and the messages:
// lorem words for text (one word, one token), a JSON value valid against the
// schema when response_format is json_schema (for the common keywords, see
// the generator in answer.go), and tool calls with schema-valid arguments
// when the request declares tools and the model is configured to call them
// or tool_choice requires it (several at once, as parallel tool calls, with
// ModelConfig.ParallelToolCalls). max_completion_tokens (or max_tokens) cuts the
// answer with finish_reason "length". Usage counts words plus 3 per message
// as prompt tokens. With stream_options.include_usage a final chunk with
// empty choices carries the usage, then "data: [DONE]".
//
// # The Responses API
//
// POST /v1/responses is served by the same models, answers and faults, in
// the Responses API's format (openai-go v3.99.0's responses package, and
// the API reference at platform.openai.com/docs/api-reference/responses):
// input items (messages, function_call, function_call_output, reasoning)
// are read as the chat messages they stand for, and the answer is a
// response object, or streamed (once the model starts: after its TTFT, or
// with its first reasoning step) as response.created, response.in_progress,
// each output item's added, delta and done events, then
// response.completed (response.incomplete when max_output_tokens cuts
// it), without [DONE]; FaultStreamError sends response.failed, or the
// error event when Fault.Event is "error". A request that asks for
// reasoning ("reasoning" with an effort other than "none"), or a model
// with ThinkEvery, reasons first: a reasoning item whose summary (when
// reasoning.summary is set) is "step 1. step 2. ...", one step per
// ThinkEvery of its TTFT, two reasoning tokens each, and whose
// encrypted_content (with include ["reasoning.encrypted_content"]) the
// server checks when a later request sends the item back: another
// server's is a 400 invalid_encrypted_content, and an item sent back
// without it is a 400 unless a stored response made it. Responses are
// stored unless the request says "store": false (the first 10000), for
// previous_response_id; an unknown one is a 400
// previous_response_not_found.
//
// # Faults
//
// For each request one draw from the model's seeded generator picks at most
// one [Fault]: an HTTP status with an OpenAI error body
// ({"error":{"message","type","param","code"}}), retry-after (seconds or
// HTTP-date) and retry-after-ms headers and x-should-retry; a 400
// context_length_exceeded; a stall before the headers or in the middle of the
// body; a malformed body; an error event inside an HTTP 200 stream (overloaded,
// or a prompt too long); a truncated answer; a dropped connection. Stalls
// wait on timers and on the request's context, so they end when the client
// goes away. Each model may also announce OpenAI's x-ratelimit-* headers
// (see [RateLimit]), with resets formatted as [FormatReset] does, and enforce
// them with 429s that carry retry-after-ms until the window resets.
// ModelConfig.Jitter spreads latencies, from the same seed. These are the
// failures Google's SRE book ("Addressing Cascading Failures") and the
// providers' own guides ask a client to survive: timeouts, 429s with
// Retry-After, 5xx, invalid bodies, context overflow and slow streams.
//
// # Scripts
//
// ModelConfig.Script plays Faults in order instead of drawing them: request
// 1 answers 503, request 2 answers normally, request 3 gets a 200 whose body
// is no completion. Fault.Header sends any header, a malformed retry-after
// included; Fault.Body replaces the error object (any status 200-599) or the
// data of a stream's error event, and Fault.Event names that event
// ("event: error"), before any content (AfterChunks 0) or after it:
//
//	Script: []fakeopenai.Fault{
//		{Kind: fakeopenai.FaultStatus, Status: 503, Header: http.Header{"Retry-After": {"soon"}}},
//		{},
//		{Kind: fakeopenai.FaultStatus, Status: 200, Body: `null`},
//		{Kind: fakeopenai.FaultStreamError, AfterChunks: 2, Event: "error",
//			Body: `{"object":"error","message":"too long","code":400}`},
//	}
//
// For answers no Fault describes, Config.Handler serves the test's own
// http.Handler on the same loopback or in-memory server, and the requests
// are still recorded.
//
// # What it records
//
// [Server.Requests] returns every request in order of arrival with its body,
// its traceparent header (also echoed in the response) and the fault injected;
// [Server.Count] counts requests per model.
package fakeopenai
