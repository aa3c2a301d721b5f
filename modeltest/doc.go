// Package modeltest provides fakes for testing code built on [portico.Model]:
// a scripted model, a fault-injecting middleware, a capacity-limited FIFO server
// for overload experiments, a retry budget for tests of hedging ([Budget]),
// and a conformance suite any Model or middleware can be checked with. It is to Portico what net/http/httptest and testing/slogtest
// are to net/http and log/slog. The HTTP test servers of providers' APIs live in
// sub-packages: modeltest/fakeopenai (OpenAI-compatible),
// modeltest/fakeanthropic (Anthropic's Messages API) and modeltest/fakegemini
// (the Gemini API).
//
// Everything here waits with timers that select on the context, so it runs in a
// testing/synctest bubble on virtual time: a test of a retry layer's backoff, a
// TTFT timeout or a five-minute overload runs in milliseconds and gives the same
// result every time.
//
// # Scripted answers
//
// A [Fake] plays one [Outcome] per call: from a list ([NewFake], the last
// repeating), from a function of the call index and request ([NewFakeFunc]), or
// "ok". An Outcome is a Response or an error, with optional latency, time to
// first token, gaps between chunks, a stall after k chunks, or a failure
// mid-stream. A streaming request (OnChunk set) receives the answer as chunks,
// split after each space unless given, which concatenate to Response.Text. The
// Fake records every call (a copy of the request, the attempt and deadline the
// context carried) and counts them atomically:
//
//	fake := modeltest.NewFake(
//		modeltest.Fail(modeltest.RateLimitError(2*time.Second)),
//		modeltest.Fail(modeltest.StatusError(503)),
//		modeltest.Answer("done"),
//	)
//	resp, err := retrying(fake).Generate(ctx, req) // three calls, then "done"
//
// The error constructors ([StatusError], [RateLimitError],
// [ConnRefusedError], [TimeoutError], [ContextOverflowError]) return
// [*portico.Error] values classified as the provider adapters classify them,
// each wrapping [ErrInjected].
//
// # Fault injection
//
// [Faults] is a middleware that, for a chosen fraction of calls per
// [FaultKind], returns a 429 with Retry-After, a 500, 502 or 503, a connection
// error before send, an ambiguous timeout after send, a slow first token, a
// stall after k chunks, invalid JSON, a truncated answer or a context overflow
// (the Principles of Chaos Engineering: real events on a small fraction of
// traffic). The choice is a pure function of
// the seed and the call index, drawn from math/rand/v2's PCG, so the counts are
// reproducible under any concurrency; [Faults.Counts] reports them.
//
// # Overload
//
// [CapacityServer] is a Model with c slots and a FIFO queue that does not know
// who gave up: a caller whose context ends returns, but its call stays queued
// and is served for nobody, the fuel of a metastable failure (Bronson et al.,
// "Metastable Failures in Distributed Systems", HotOS 2021). With it the
// package's tests reproduce the overload table of docs/SEEDS.md for a 10 s
// outage: without retries
// goodput returns to 80/s by itself once the stale queue drains; with three
// immediate retries it stays at zero; dropping expired calls (DropExpired,
// which also skips calls that would finish after their deadline) recovers at
// once. Package retry's tests run the same simulation through its Retrier and
// reproduce every row, the 10% retry budget's included.
//
// # Conformance
//
// [Run] checks a middleware against the [portico.Model] contract, as
// testing/slogtest checks a slog.Handler. The suite supplies the base Model
// (a Fake that answers, fails, is slow or stalls) and the caller wraps it:
//
//	func TestConformance(t *testing.T) {
//		modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
//			return retry.MustNew(retry.Config{}).Wrap(base)
//		})
//	}
//
// Each subtest runs in its own testing/synctest bubble, on virtual time, so
// backoffs and waits cost nothing real:
//
//   - Answer: an answering base gives a Response with base's text and a nil
//     error.
//   - Error: a base failing with a permanent, transient, rate-limited or
//     incompatible error gives a nil Response and a non-nil error.
//   - Concurrent: 8 goroutines make 25 calls each against a base that echoes
//     the request; every call returns a Response XOR an error, every
//     Response answers its own request, and at least one call succeeds.
//   - NoMutation: a request with messages, tool calls, tools, schema, Extra,
//     identity and contract is deeply equal before and after calls that
//     answer, fail and stream.
//   - Cancel: with a base that takes an hour or stalls mid-stream, canceling
//     the context after 10 ms, or its 10 ms deadline passing, makes Generate
//     return with no further (virtual) time passing, with a nil Response and
//     an error that [portico.ClassOf] reports as Canceled or Deadline; so
//     does an already canceled context.
//   - Stream: the chunks the caller receives are in order, never concurrent,
//     none after Generate returns, and concatenate to the Response's Text;
//     an error from the callback aborts the call with an error that wraps it.
//   - Reasoning: an answer's Thoughts and Usage.ReasoningTokens come through
//     unchanged; Thoughts passed back in the next request's messages reach
//     the base unchanged; reasoning chunks (Chunk.Reasoning) reach the
//     caller exactly when the base sent them, before the text.
//
// [RunGone] checks, beside it, the rule every layer that spends keeps for
// a request whose caller has gone ([portico.Gone]): a context canceled or
// past its deadline gets the context's error, NotSent, base never called.
//
// # What the requests carry
//
// Every subtest of [Run] sends the same request (Concurrent changes only the
// last user text):
//
//   - Model "suite-model", MaxOutputTokens 64, Extra sampling options, an
//     Identity, and NoAmbiguousRetry;
//   - a system message; a user message with text and an image (a data: URL);
//     an assistant tool call with its tool result; a last user message;
//   - one tool, "lookup";
//   - a Contract with ModelClasses ["small"] and MaxInputTokens 1000.
//
// A router, fallback group or stack filters its routes with
// [portico.Capabilities.Fits], so the routes wrap builds must declare
// Modalities ModalityText|ModalityImage, Tools, ModelClass "small", a
// ContextWindow of at least 1064 tokens and a MaxOutput of at least 64 (or
// leave those two 0, unknown); otherwise every call fails Incompatible and
// Answer fails.
//
// [RunModel] checks a standalone Model, such as a provider adapter over a test
// server, with what can be checked without controlling its speed.
package modeltest
