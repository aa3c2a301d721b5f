// Package fakeanthropic is an Anthropic-compatible Messages API server for
// tests and examples: it answers POST /v1/messages as a JSON message or as
// Anthropic's stream of server-sent events (and POST
// /v1/messages/count_tokens with the input tokens such a call reports),
// from several models each with its own latency, time to first token and
// generation speed, and it injects
// faults on a chosen fraction of requests, deterministically from a seed, or
// in a scripted order. It imports no SDK.
//
// # Starting it
//
// [Start] binds 127.0.0.1 on a free port (an [net/http/httptest.Server]);
// point an SDK at [Server.BaseURL]. [StartPipe] serves the same handler over
// in-memory connections (net.Pipe) for tests inside a testing/synctest
// bubble, where every latency and stall passes in virtual time; reach it
// through [Server.Client]. [New] gives the bare [Server.Handler] to serve
// yourself. [Server.Close] ends every stall and waits for the server's
// goroutines.
//
//	s, err := fakeanthropic.Start(fakeanthropic.Config{Seed: 1, Models: []fakeanthropic.ModelConfig{{
//		Name: "flaky", TTFT: 20 * time.Millisecond, TokensPerSecond: 200,
//		Faults: []fakeanthropic.Fault{
//			{Kind: fakeanthropic.FaultStatus, Status: 529, Fraction: 0.1},
//			{Kind: fakeanthropic.FaultStreamError, AfterChunks: 3, Fraction: 0.05},
//		},
//	}}})
//	defer s.Close()
//	client := anthropic.NewClient(option.WithBaseURL(s.BaseURL()), option.WithAPIKey("x"))
//
// # What it answers
//
// Like the API it requires the anthropic-version header, an x-api-key (or
// Authorization) header and max_tokens, and answers 400, 401 and 404 in
// Anthropic's error format otherwise. Answers are deterministic functions of
// the seed, the model and the conversation: lorem words for text (one word,
// one token), a JSON value valid against the schema when output_config.format
// is json_schema, and tool_use blocks with schema-valid input when the
// request declares tools and the model is configured to call them or
// tool_choice requires it (several at once with ModelConfig.ParallelToolCalls).
// max_tokens cuts the answer with stop_reason "max_tokens", a stop sequence
// with "stop_sequence". Usage counts words plus 3 per message as input, split
// into input_tokens, cache_read_input_tokens and cache_creation_input_tokens
// as ModelConfig says, as the API splits them.
//
// With thinking {"type":"enabled","budget_tokens":N} the answer starts with
// a thinking block whose signature the fake makes from the model and the
// text (a redacted_thinking block with ModelConfig.RedactThinking), counted
// in output_tokens; and as the API it refuses a budget below 1024 or not
// below max_tokens, a thinking block it did not sign, and tool results
// whose assistant turn does not start with a thinking block while thinking
// is on. ModelConfig.ToolRounds makes a tool-use loop of several turns.
//
// A stream is framed as the API frames it
// (https://docs.claude.com/en/docs/build-with-claude/streaming): "event:
// message_start" (id, model, input usage), per content block
// content_block_start, content_block_delta (text_delta or input_json_delta,
// one per token) and content_block_stop, a ping after the first block's
// start, message_delta with the stop reason and the output usage, and
// message_stop.
//
// # Faults
//
// For each request the model's next [ModelConfig].Script step, or else one
// draw from the model's seeded generator, picks at most one [Fault]: an HTTP
// status with Anthropic's error body ({"type":"error","error":{"type",
// "message"}}; 529 is overloaded_error) and its retry-after and
// x-should-retry headers; a prompt too long; a stall before the headers or in
// the middle of the body; a malformed body or event; an "event: error"
// inside the HTTP 200 stream, before content or after Fault.AfterChunks
// deltas; a truncated answer; a dropped connection. [FaultKind]'s constants
// say how each looks on the wire. Stalls wait on timers and on the request's
// context, so they end when the client goes away. A model may also announce
// the anthropic-ratelimit-* headers, with requests, input tokens and output
// tokens as separate limits (see [RateLimit]), and enforce them with 429s
// that carry retry-after; and refuse prompts beyond a context window or a
// max_tokens beyond its ceiling, with the API's own messages.
//
// # What it records
//
// [Server.Requests] returns every request in order of arrival with its body,
// its traceparent header (also echoed in the response) and the fault
// injected; [Server.Count] counts requests per model, so tests prove how many
// requests reached the wire.
package fakeanthropic
