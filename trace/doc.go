// Package trace shows where the time of each LLM call went, per request and
// per attempt, with OpenTelemetry spans, metrics and log/slog records, and
// with nothing private leaked: every attempt is exposed, so that a retry
// storm does not look like more traffic.
//
// # Two layers
//
// A [Tracer], built by [New] from a [Config], offers two middlewares:
//
//   - [Tracer.Wrap], the request layer, goes outermost. One client span per
//     request, named "{gen_ai.operation.name} {gen_ai.request.model}" ("chat
//     gpt-4o"), attributed after the OpenTelemetry GenAI semantic conventions
//     (gen_ai.operation.name, gen_ai.provider.name, request and response
//     model, gen_ai.response.id (from [portico.Response].ID, when the
//     provider gave one), gen_ai.request.max_tokens, gen_ai.request.stream, token usage
//     including gen_ai.usage.cache_read.input_tokens and
//     gen_ai.usage.reasoning.output_tokens, finish reasons,
//     gen_ai.response.time_to_first_chunk, error.type (the [portico.Class]),
//     server.address and server.port) and Portico's own portico.* attributes
//     (portico.refused_by, the [portico.Refuser] of a refused request).
//     The answering route's provider, server and model (when the request
//     names none) replace the request layer's own at the end, so a request
//     a fallback answered names the fallback.
//   - [Tracer.WrapAttempt], the attempt layer, goes inside the retry layer,
//     next to the provider adapter: one child client span per attempt, named
//     "attempt {model}", with portico.attempt.index, portico.attempt.id,
//     portico.attempt.model, portico.route and portico.attempt.provider (of
//     the route's own Tracer, [Tracer.ForRoute]), on retries
//     http.request.resend_count (after the HTTP conventions for resends),
//     server.address and server.port,
//     error.type and http.response.status_code, and the attempt's own usage
//     and cost under portico.attempt.usage.* and portico.attempt.cost; no
//     gen_ai.* attribute (see "Counted once").
//
// A typical stack, each Chain's middlewares outermost first:
//
//	route := portico.Chain(adapter, modelLimit.Wrap, brk.Wrap, retrier.Wrap, tr.WrapAttempt, validator.Wrap)
//	stack := portico.Chain(group, tr.Wrap, clientLimit.Wrap) // group: a fallback over such routes
//
// With the attempt layer outside validation, an attempt whose answer is
// rejected ends with error.type invalid_response, and the rejection event
// lands on that attempt's span.
//
// # Counted once
//
// Only the request span is a GenAI inference span; token usage is counted
// once per request. The OpenTelemetry GenAI semantic conventions
// (semantic-conventions-genai, docs/gen-ai/gen-ai-spans.md, "Spans"; status
// Development) say that GenAI spans represent logical operations as observed
// by the caller, and that when a transient issue made the request be retried
// automatically, the span SHOULD cover the logical operation with all its
// retries. The HTTP conventions (semantic-conventions, docs/http/http-spans.md,
// "HTTP client span" and "HTTP request retries and redirects"; Stable) give
// the other half: one client span per physical attempt, each resend marked
// with http.request.resend_count, the attempt's ordinal.
//
// So the request span carries everything GenAI: gen_ai.operation.name (the
// attribute that makes a span a GenAI span), the request parameters, the
// answer's gen_ai.usage.* and portico.cost. Attempt spans carry the
// per-attempt facts of the HTTP conventions and Portico's own, but no gen_ai.*
// attribute and a name of their own, so that a backend that sums
// gen_ai.usage.* (or portico.cost) over all GenAI spans of a trace, as
// Langfuse- or Braintrust-style cost roll-ups do, counts the answering
// attempt's tokens once, not twice. What each attempt consumed stays
// visible, and summable on its own, under portico.attempt.usage.input_tokens,
// .output_tokens, .cache_read.input_tokens and portico.attempt.cost: the
// answer's usage, or for a failed attempt the usage its [portico.Error]
// carries when the provider billed it (an answer validation rejected, a
// stream cut after usage was reported). Summing those over attempt spans
// gives what the provider billed across retries; gen_ai.usage.* on the
// request span is the answer's usage, as the conventions define it. The
// gen_ai.client.* metrics are likewise recorded once per request, by the
// request layer. An HTTP instrumentation under [Tracer.Transport] (such as
// otelhttp) would add its own spans below the attempt's, which the HTTP
// conventions then describe.
//
// # What inner layers report
//
// Policy layers do not import this package. They report what they did with
// [portico.Observe]; the request layer installs a [portico.Observer] in the
// request's context ([portico.ContextWithObserver]) that turns each
// [portico.Event] into a span event on the span current where it happened
// (rate-limit wait and rejection, retry scheduled, budget exhausted, fallback
// taken, breaker state change, validation rejected, hedge sent or refused
// by the budget or Contract.MaxCost), folds it into the request span's attributes
// (portico.route, portico.fallback.source and
// .reason, portico.retry.reason, .delay and .count, portico.breaker.state,
// portico.ratelimit.wait, portico.retry.budget_exhausted,
// portico.validation.result) and counts it in the metrics. Events are then
// forwarded to any Observer the caller had installed.
//
// # Time to first chunk, decomposed
//
// For streamed requests the request layer wraps OnChunk on a clone of the
// request (the caller's is never modified) and, at the first chunk, adds a
// portico.first_chunk event whose attributes split TTFT into the rate-limit
// wait, the routing and queueing before the answering attempt (failed
// attempts and backoff included), and the provider's own time to first chunk
// (measured from the start of that attempt's span; the attempt span carries
// it as portico.ttft.provider, on its own portico.first_chunk event too).
// TTFT = gateway + rate-limit wait + routing + queue + prefill + network;
// the trace says which term grew.
//
// # Propagation
//
// [Tracer.Transport] wraps the provider adapter's http.RoundTripper and
// injects the context's trace (W3C traceparent by default) into each
// outgoing request. Under the attempt layer that is the attempt's span, so a
// server-side trace joins the client's below the very attempt that called it.
// With openai-go: option.WithHTTPClient(&http.Client{Transport: tr.Transport(nil)}).
//
// # Content
//
// Prompt, answer and tool-argument text never appear in spans, span events,
// metrics or logs by default. [Config.CaptureContent] opts in: every piece of
// content passes through the user's redaction or hashing function before it
// goes into gen_ai.input.messages and gen_ai.output.messages on the request
// span (attempt spans never carry content). Logs never
// carry content. Error status descriptions carry only the class, the
// provider's code and the content-free reason of a [*portico.Error].
//
// # Metrics and logs
//
// With a meter provider, the request layer records the GenAI client metrics
// (gen_ai.client.token.usage by gen_ai.token.type,
// gen_ai.client.operation.duration, gen_ai.client.operation.time_to_first_chunk)
// and the routing rates: requests by outcome and final route (so fallback,
// deadline-exhaustion and ambiguous-outcome rates are ratios of counters),
// fallbacks, attempts per completed request (counted by the attempt layer
// when there is one; else one plus the retries, and 0 for a request whose
// error says nothing was sent: portico.NothingSent), validation
// rejections, cost per
// accepted answer, latency per final route, retries, budget exhaustion,
// breaker transitions, limiter waits and rejections; see the Metric*
// constants. With a Logger, one record per request ([LogRequest]) and one per
// attempt ([LogAttempt]) carry the same fields: operation id, attempt id,
// provider, model, error class, status, latency, tokens, cost, route,
// fallback reason, validation result, breaker state and outcome, plus the
// provider's response id (response_id) for correlation with its logs.
//
// # Cost
//
// Attributes are built only when the span records, and metrics only when the
// instruments are enabled. With the no-op tracer provider the layers do not
// even start a span: a call costs a few nanoseconds and no allocation; with
// the no-op meter provider too and no Logger, the Tracer would record
// nothing, and Wrap and WrapAttempt return the Model they wrap. The
// same holds for the zero Config before any SDK is installed (otel's global
// placeholder provider): after one probing Start finds that it creates no
// span, the layers skip Start for as long as otel.GetTracerProvider() still
// returns the placeholder, so a later otel.SetTracerProvider takes effect on
// the next call. With a
// sampling SDK the request layer is measured against a hand-written span
// with the same attributes (BenchmarkOverheadRatio).
//
// # Tail sampling
//
// [TailSampler] is a span processor that buffers each trace until its local
// root ends, then keeps every trace with an error or a root slower than a
// threshold, and a deterministic share (by trace id) of the rest: head
// sampling loses exactly the rare slow and failed requests that tail sampling
// keeps. The decision is per trace id: when one trace has several local roots
// in this process (two requests made under the same remote parent, with no
// local span above them), the first root to end decides for all, and a later
// failed one is not kept if the first was not; put one local span above such
// requests to have them decided together.
package trace
