package trace

import "go.opentelemetry.io/otel/attribute"

// Attribute keys of the OpenTelemetry GenAI, HTTP and general semantic
// conventions that the layers set (GenAI conventions, development status, as of
// the semantic-conventions-genai repository; gen_ai.provider.name replaces the
// deprecated gen_ai.system).
const (
	KeyOperationName      = attribute.Key("gen_ai.operation.name")
	KeyProviderName       = attribute.Key("gen_ai.provider.name")
	KeyRequestModel       = attribute.Key("gen_ai.request.model")
	KeyResponseModel      = attribute.Key("gen_ai.response.model")
	KeyResponseID         = attribute.Key("gen_ai.response.id") // Response.ID, when the provider gave one
	KeyRequestMaxTokens   = attribute.Key("gen_ai.request.max_tokens")
	KeyRequestStream      = attribute.Key("gen_ai.request.stream")
	KeyRequestTemperature = attribute.Key("gen_ai.request.temperature") // from Request.Extra["temperature"]
	KeyRequestTopP        = attribute.Key("gen_ai.request.top_p")       // from Request.Extra["top_p"]
	KeyRequestSeed        = attribute.Key("gen_ai.request.seed")        // from Request.Extra["seed"]
	KeyInputTokens        = attribute.Key("gen_ai.usage.input_tokens")
	KeyOutputTokens       = attribute.Key("gen_ai.usage.output_tokens")
	KeyCacheReadTokens    = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	KeyReasoningTokens    = attribute.Key("gen_ai.usage.reasoning.output_tokens") // Usage.ReasoningTokens, part of output_tokens; when non-zero
	KeyFinishReasons      = attribute.Key("gen_ai.response.finish_reasons")
	KeyTimeToFirstChunk   = attribute.Key("gen_ai.response.time_to_first_chunk") // seconds
	KeyInputMessages      = attribute.Key("gen_ai.input.messages")               // opt-in only
	KeyOutputMessages     = attribute.Key("gen_ai.output.messages")              // opt-in only
	KeyTokenType          = attribute.Key("gen_ai.token.type")                   // metrics: "input" or "output"
	KeyErrorType          = attribute.Key("error.type")                          // the portico Class string
	KeyServerAddress      = attribute.Key("server.address")
	KeyServerPort         = attribute.Key("server.port")
	KeyHTTPResendCount    = attribute.Key("http.request.resend_count") // attempt spans: the attempt index, on retries only
	KeyHTTPStatusCode     = attribute.Key("http.response.status_code") // attempt spans: a failure's portico.Error.Status, when non-zero
	KeyAttemptIndex       = attribute.Key("portico.attempt.index")
	KeyAttemptID          = attribute.Key("portico.attempt.id")
	KeyAttemptModel       = attribute.Key("portico.attempt.model")    // the model an attempt asked for (Request.Model there, else the route's)
	KeyAttemptProvider    = attribute.Key("portico.attempt.provider") // the attempt's route's provider (gen_ai.provider.name's value)
	// The attempt's own token usage and cost: what the provider reported for
	// this attempt, the answer's Usage or, for a failed attempt, its
	// portico.Error.Usage (e.g. a rejected answer that was billed). Never the
	// gen_ai.usage.* keys, which only the request span carries (see the
	// package documentation, "Counted once").
	KeyAttemptInputTokens     = attribute.Key("portico.attempt.usage.input_tokens")
	KeyAttemptOutputTokens    = attribute.Key("portico.attempt.usage.output_tokens")
	KeyAttemptCacheReadTokens = attribute.Key("portico.attempt.usage.cache_read.input_tokens")
	KeyAttemptReasoningTokens = attribute.Key("portico.attempt.usage.reasoning.output_tokens")
	KeyAttemptCost            = attribute.Key("portico.attempt.cost") // in the routes' price unit
	KeyAttempts               = attribute.Key("portico.attempts")     // attempts made for a request; 0 when refused before any
	KeyOperationID            = attribute.Key("portico.operation.id")
	KeyRoute                  = attribute.Key("portico.route")
	KeyFallbackSource         = attribute.Key("portico.fallback.source")
	KeyFallbackReason         = attribute.Key("portico.fallback.reason")
	KeyRetryReason            = attribute.Key("portico.retry.reason")
	KeyRetryDelay             = attribute.Key("portico.retry.delay") // seconds
	KeyRetryCount             = attribute.Key("portico.retry.count")
	KeyRetryDelaySource       = attribute.Key("portico.retry.delay_source") // "backoff" or "retry_after"
	KeyBudgetExhausted        = attribute.Key("portico.retry.budget_exhausted")
	KeyBreakerState           = attribute.Key("portico.breaker.state")
	KeyRefusedBy              = attribute.Key("portico.refused_by")       // a refused request's portico.Refuser ("client_limit")
	KeyRateLimitWait          = attribute.Key("portico.ratelimit.wait")   // seconds
	KeyRateLimitReason        = attribute.Key("portico.ratelimit.reason") // rejections
	KeyRetryAfter             = attribute.Key("portico.retry_after")      // seconds
	KeyValidationResult       = attribute.Key("portico.validation.result")
	KeyContinueForm           = attribute.Key("portico.continue.form") // "prefill" or "instruct"
	KeyCost                   = attribute.Key("portico.cost")          // in the routes' price unit
	KeyOutcome                = attribute.Key("portico.outcome")       // metrics: "accepted" or the error class
	KeySharedStore            = attribute.Key("portico.shared_store")  // "<layer>:fail_open" or "<layer>:fail_closed"
	KeyLayerTTFT              = attribute.Key("portico.layer.time_to_first_chunk")
	KeyTTFTRateLimitWait      = attribute.Key("portico.ttft.ratelimit_wait") // seconds
	KeyTTFTRouting            = attribute.Key("portico.ttft.routing")        // seconds
	KeyTTFTProvider           = attribute.Key("portico.ttft.provider")       // seconds; on attempt spans, the attempt's own TTFT
	KeyHedgeDelay             = attribute.Key("portico.hedge.delay")         // seconds after the attempt before it
	KeyHedgeReason            = attribute.Key("portico.hedge.reason")        // "sent", "budget" or "max cost"
	KeyCacheResult            = attribute.Key("portico.cache.result")        // "hit" or "miss" (package respcache)
	KeyGuardrail              = attribute.Key("portico.guard.name")          // an input guardrail's name (package guard)
	KeyGuardResult            = attribute.Key("portico.guard.result")        // "pass", "refused", "fail_open:<kind>", "fail_closed:<kind>"
)

// Span event names.
const (
	EventNameRateLimitWait    = "portico.rate_limit.wait"
	EventNameRateLimitReject  = "portico.rate_limit.reject"
	EventNameRetry            = "portico.retry.scheduled"
	EventNameBudgetExhausted  = "portico.retry.budget_exhausted"
	EventNameFirstChunk       = "portico.first_chunk"
	EventNameLayerFirstChunk  = "portico.layer.first_chunk"
	EventNameFallback         = "portico.fallback"
	EventNameBreakerState     = "portico.breaker.state_change"
	EventNameValidationReject = "portico.validation.rejected"
	EventNameHedge            = "portico.hedge"
	EventNameContinue         = "portico.continue" // a broken stream sent to a route to continue
	EventNameSharedStore      = "portico.shared_store.degraded"
	EventNameCache            = "portico.cache" // a response cache lookup, hit or miss
	EventNameGuard            = "portico.guard" // an input guardrail's verdict
)
