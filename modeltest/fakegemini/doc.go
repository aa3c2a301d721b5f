// Package fakegemini is a Gemini API server for tests and examples: it
// answers generateContent as JSON and streamGenerateContent?alt=sse as
// server-sent events (and countTokens with the prompt tokens such a call
// reports), at the Gemini Developer API's paths
// (/v1beta/models/{model}:generateContent) and Vertex AI's
// (/v1beta1/projects/{p}/locations/{l}/publishers/google/models/{model}:...),
// from several models each with its own latency, time to first token and
// generation speed, and it injects faults on a chosen fraction of requests,
// deterministically from a seed, or in the order a script gives. It needs no
// SDK: point google.golang.org/genai at it with HTTPOptions.BaseURL.
//
// # Starting it
//
// [Start] binds 127.0.0.1 on a free port; [StartPipe] serves the same
// handler over in-memory connections (net.Pipe) for tests inside a
// testing/synctest bubble, where every latency and stall passes in virtual
// time; reach either through [Server.Client]. [New] gives the bare
// [Server.Handler]. [Server.Close] ends every stall and waits for the
// server's goroutines.
//
//	s, err := fakegemini.Start(fakegemini.Config{Models: []fakegemini.ModelConfig{{
//		Name: "gemini-2.5-flash", TTFT: 20 * time.Millisecond, TokensPerSecond: 200,
//		Script: []fakegemini.Fault{ // request 1: 429 with retryDelay 2s; then answers
//			{Kind: fakegemini.FaultStatus, Status: 429, RetryAfter: 2 * time.Second},
//		},
//		Faults: []fakegemini.Fault{{Kind: fakegemini.FaultStatus, Status: 503, Fraction: 0.05}},
//	}}})
//	defer s.Close()
//	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "x",
//		HTTPClient: s.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: s.URL()}})
//
// # What it answers
//
// Answers are deterministic functions of the seed, the model and the
// contents: lorem words for text (one word, one token, one streamed
// chunk), a JSON value valid against the schema when generationConfig has
// responseMimeType application/json with responseJsonSchema (or
// responseSchema), and functionCall parts with schema-valid args when the
// request declares functionDeclarations and the model is configured to
// call them or toolConfig's mode is ANY (several at once with
// ModelConfig.ParallelToolCalls; with ids and a Gemini 3 thought signature
// when asked). maxOutputTokens cuts the answer with finishReason
// MAX_TOKENS. Every chunk of a stream carries usageMetadata with the
// running totals; the last one carries the finish reason. Usage counts
// words plus 3 per content as prompt tokens. A model may also answer with
// another finish reason (ModelConfig.FinishReason: SAFETY, RECITATION,
// MALFORMED_FUNCTION_CALL, ...) or block every prompt
// (ModelConfig.BlockReason: promptFeedback.blockReason, no candidates).
// With generationConfig.thinkingConfig.includeThoughts the answer starts
// with a thought part ({"text", "thought": true}) counted in
// thoughtsTokenCount; ModelConfig.ToolRounds makes a tool-use loop of
// several turns.
//
// It refuses, with the Gemini API's own 400 INVALID_ARGUMENT wording, what
// the real one refuses and an adapter might send: no contents, inlineData
// that is not base64, a functionResponse without a name, a function call
// sent back without the thought signature it came with, or with one the
// fake did not make for that call. With
// Config.APIKey set, any other key gets 400 with ErrorInfo reason
// API_KEY_INVALID; an unknown model gets 404 NOT_FOUND.
//
// # Faults
//
// For each request the model's next [Fault] is drawn ([ModelConfig].Faults,
// by fraction) or played ([ModelConfig].Script, in order): an HTTP status
// with Google's error object ({"error":{"code","message","status",
// "details"}}), whose 429 carries QuotaFailure and Help details and, with
// Fault.RetryAfter, a google.rpc.RetryInfo retryDelay ("37s") in the body,
// not a header, as Google sends it; 400 "The input token count (N) exceeds
// the maximum number of tokens allowed (M)."; a stall before the headers or
// mid-body; a malformed body; an error object as a data event inside an
// HTTP 200 stream; a truncated answer; a dropped connection; or any body
// verbatim (Fault.Body). The fault vocabulary, recording and pacing are
// those of every fake in package modeltest.
//
// # What it records
//
// [Server.Requests] returns every request in order of arrival with its
// body, its traceparent header (also echoed in the response) and the fault
// injected; [Server.Count] counts requests per model.
package fakegemini
