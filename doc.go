// Package portico puts a gateway's defences in-process, in front of every call an
// application makes to a language model: limit, retry, break, route, fall back,
// validate and trace, with no network hop and no sidecar.
//
// # One interface
//
// Everything is a [Model]: a provider SDK behind an adapter (package
// provider/openai), a fake (package modeltest), or a Model wrapped by
// [Middleware]. A stack is built with [Chain], first argument outermost, as with
// [net/http.RoundTripper] wrappers and [log/slog.Handler]s.
//
// Streaming goes through the same method: a [Request] whose OnChunk is set gets
// the answer's text as it arrives, and still receives the assembled [Response] at
// the end. Layers wrap OnChunk to see the first token (TTFT), the gaps between
// tokens, and whether anything reached the caller: after that, no layer retries or
// falls back transparently.
//
// # Streams
//
// Some layers hold chunks back from their caller (package validate buffering
// an answer until it is accepted, a cascade buffering a step). A retry layer
// outside them would take such a live stream for a stalled one, so it
// installs a progress function ([ContextWithProgress]) for its TTFT and
// inter-token timeouts and its rate floor (retry's Timeouts.MinRate), as a
// fallback group does for a stream's share (which bounds the gaps between
// its signs of progress), and the layers that hold chunks call [Progress]
// for each. A Model may call it too for an event of its stream that carries no text
// (a reasoning step): any sign of life counts, not only text.
//
// A fallback group asked to continue a broken stream (Request.ContinueOnBreak)
// sends the text already delivered to a route that can continue it
// ([Capabilities.Continuation]; package fallback's doc tells the whole way)
// and joins the new text with a [Seam], whose rules read a continuation as
// a model writes one. A model that starts over and agrees with the text
// repeats it whole: the repetition is dropped. One that starts over,
// repeating the text's first 16 bytes, and departs from it later
// contradicts what the caller was shown, which no join can mend
// ([ErrRestart]). A repeated tail of 8 bytes or more is an overlap and is
// dropped; a shorter repetition, a word said twice, may be meant and is
// kept. The delivered text's trailing white space is not sent (Anthropic
// refuses it in a prefill), so the Seam matches it against the
// continuation's start.
//
// # Errors
//
// Every failure is classified before anything acts on it. An [*Error]
// carries a [Class] — [Permanent], [Transient], [RateLimited] (with Retry-After),
// [Incompatible], [InvalidResponse], [Ambiguous], [Canceled], [Deadline],
// [Rejected], [Unusable] — and the layers decide by class alone: retry retries only what can
// succeed later, a breaker counts only what says something about the route
// (the breaker column of [FaultOf]), a fallback moves on only from what another route can fix.
// [ClassOf] classifies any error; unknown errors are Permanent.
//
// Whose fault an outcome is, [FaultOf] says once, and each layer reads its
// verdict. The columns of its table differ where the layers ask different
// questions: a breaker and a ranker judge the route's health, and a run of
// unanswered failures is a route that answers no one (the breaker's run of
// consecutive failures, never its rate); a throttle counts the requests the
// destination accepted, and it accepted one it refused for the request's
// fault; an adaptive limit measures capacity, so an answer, even a broken or
// refused one, is a latency sample and only a class that may be overload
// (Transient, RateLimited, Ambiguous) a drop; a hedge stops when another
// attempt to the same route would repeat the failure (not after an answer,
// which another attempt may give right). Two outcomes only a layer knows: the
// caller's own OnChunk ending a streamed call is the caller's (a layer that
// watches the stream reads it as Canceled), and a fallback group's ranker
// counts a Deadline that came while the caller's deadline held as the route's
// (its share ran out).
//
// Three classes say that a request was not served where it went, and whose
// fault that is:
//
//   - Permanent: the request is wrong on any route (a malformed parameter or
//     [Contract], a negative MaxOutputTokens, a schema that does not
//     compile). Every layer stops at once; no other route is called, no
//     route's health suffers. [Request.Validate] finds such a request before
//     any route is chosen.
//   - Incompatible: this request does not fit this route (its context
//     window, modalities, tools). A routing layer tries a route that fits;
//     the route is healthy.
//   - Unusable: this route serves no request now (its credentials, its model
//     or deployment, its quota). A routing layer moves on to another route,
//     the route's breaker opens at once, and it is not retried.
//
// A route told to come back later (RateLimited or Transient with a
// Retry-After) is retried in place only when that is worth it: a routing
// layer with another route says how long a wait is ([ContextWithMaxWait]),
// and when no route takes calls, its error's RetryAfter says when the first
// will ([Health].RetryAfter).
//
// # Routes, capabilities and contracts
//
// A route is a Model with [Capabilities] (context window, modalities, tools,
// schema mode, model class, prices, provider and region). A workload states what it
// needs in a [Contract]; [Capabilities.Fits] is the one filter that routers,
// cascades and fallbacks share. An [Estimator] predicts input tokens before the
// call; [DefaultEstimator] counts bytes.
//
// Fits checks first what makes a request wrong on any route
// ([Request.Validate], a negative token count), so that its [Permanent]
// answer does not depend on the route: a routing layer stops at once with
// such an error, calling nothing, where it skips a route that is only
// Incompatible.
//
// # The order of layers
//
// The recommended stack, outermost first:
//
//   - trace: one span per request, so every layer's time is inside it;
//   - end-to-end deadline: the budget every later layer spends, a limiter's
//     wait included;
//   - per-client rate limit: who gets in and how much, before any work is done;
//   - fallback over routes (or a router or cascade choosing among them);
//   - inside each route: per-model rate limit, breaker, retry, validate, and the
//     provider adapter.
//
// Retry sits inside the breaker so that a breaker sees one outcome per call, not
// one per attempt, and outside validate so an invalid answer can be retried.
// Exactly one layer retries (Google SRE book, "Addressing Cascading Failures":
// retries at several layers multiply): the adapters turn their SDK's own
// retries off.
//
// # Packages
//
//   - ratelimit: token buckets on requests and on LLM tokens, in-flight caps,
//     provider-header feedback, tiers.
//   - adaptive: in-flight limits that follow latency and loss (AIMD, Vegas,
//     Gradient2).
//   - throttle: client-side adaptive throttling (the SRE book's formula).
//   - retry: class-aware attempts, full jitter, Retry-After, retry budgets,
//     deadline-aware admission of attempts, TTFT and inter-token timeouts.
//   - breaker: per-route circuit breakers.
//   - hedge: hedged requests, delayed by a latency percentile, budgeted.
//   - rank: the one candidate, score and per-route statistics table the
//     routing packages share.
//   - route: routers, cascades and replica balancers.
//   - fallback: ordered groups of capable routes.
//   - validate: the acceptance pipeline every answer passes.
//   - effect: tool side effects at most once per execution key.
//   - spend: spend budgets per tenant and calendar window, reserved at
//     admission, settled with the answer's cost.
//   - respcache: an exact-match response cache, per tenant by default.
//   - guard: input guardrails before a request is sent, each with its
//     fail-open or fail-closed policy for its checker's failures.
//   - inflight: a per-tenant cap on calls in flight across instances, on
//     leases with a TTL.
//   - stack: the recommended stack in one constructor.
//   - protect: the configuration of the guard each adapter's Protect puts
//     around the requests of a provider SDK a service already uses.
//   - trace: OpenTelemetry spans, metrics and logs, content redacted by default.
//   - modeltest: fakes, fault injection, a conformance suite;
//     modeltest/fakeopenai, modeltest/fakeanthropic and modeltest/fakegemini:
//     in-process servers that speak each provider's wire format.
//   - provider/openai, provider/anthropic, provider/gemini: the adapters over
//     openai-go, anthropic-sdk-go and google.golang.org/genai, each a module
//     of its own.
//   - provider/openai/tokencount: OpenAI's encodings (o200k_base,
//     cl100k_base) as an offline Estimator, in the openai module.
//   - redisstore: the shared state of every layer over Redis (go-redis v9), a
//     module of its own; redisstore/redistest starts a private redis-server
//     for tests.
//   - bridge/langchaingo: a stack as a langchaingo llms.Model and a
//     langchaingo model as a Model, a module of its own.
//   - bridge/eino: a stack as an eino ToolCallingChatModel and an eino chat
//     model as a Model, a module of its own.
//
// The packages cite the public sources of their algorithms (the SRE book,
// AWS's backoff study, gRPC's retry design, RouteLLM, FrugalGPT, Autellix,
// Preble, ...); the formulas and numbers their tests reproduce are in the
// project's seed documents, and docs/SEEDS.md maps one to the other.
package portico
