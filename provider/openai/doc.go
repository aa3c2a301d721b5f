// Package openai makes a [portico.Model] of OpenAI's chat-completions API
// through the official Go SDK, github.com/openai/openai-go/v3, and of any
// server that speaks the same protocol (option.WithBaseURL).
//
// # Usage
//
//	m := openai.New(openai.Config{Model: "gpt-4o-mini"},
//		option.WithAPIKey(os.Getenv("OPENAI_API_KEY")))
//	resp, err := m.Generate(ctx, &portico.Request{Messages: []portico.Message{
//		portico.Text(portico.RoleUser, "Say hi"),
//	}})
//
// A Request with OnChunk set is streamed (stream: true, with
// stream_options.include_usage); the text deltas reach OnChunk as they
// arrive and the assembled Response is returned at the end. Tools become
// function tools; Request.Schema becomes response_format json_schema with its
// strict flag; MaxOutputTokens becomes max_completion_tokens (max_tokens with
// [Config.LegacyMaxTokens]); Request.Extra keys the SDK knows (temperature,
// top_p, seed, stop, ...) become typed parameters and the rest are set on the
// JSON body unchanged (model, messages, stream and stream_options are refused:
// the adapter owns them).
//
// # One layer owns retries
//
// The SDK retries twice by default. [New] turns that off
// (option.WithMaxRetries(0), appended after the caller's options and again on
// every call), so that each Generate is exactly one HTTP request and the
// retry layer above (package retry) owns every retry and counts it against
// its budget. Seed 003: "one layer owns retries; turn off retries in lower
// clients". Seed 001 shows why: three layers of three attempts make 27 calls.
//
// # Error classes
//
// Errors are classified before anyone acts on them (seed 003). Every error is
// a [*portico.Error]:
//
//	429                                    RateLimited, RetryAfter from retry-after-ms,
//	                                       else retry-after (seconds or HTTP-date)
//	500, 502, 503, 504 (408, 409, 5xx)     Transient
//	400 code context_length_exceeded       Incompatible
//	other 400, 401, 403, 404 (other 4xx)   Permanent
//	x-should-retry: true / false           overrides the status rule
//	error event inside an HTTP 200 stream  as the status it stands for:
//	                                       overloaded Transient, prompt too long Incompatible
//	connection failed before the request   Transient
//	was written
//	timeout or reset after it was written  Ambiguous (it may have run and been billed)
//	body not a completion, stream without  InvalidResponse wrapping ErrMalformed
//	a finish reason
//	answer past Config.MaxResponseBytes    InvalidResponse wrapping ErrTooLarge
//	(an error body that long: its status's class, wrapping ErrTooLarge)
//	caller's ctx canceled / deadline       Canceled / Deadline
//	a layer's own timeout (ctx ended with  Ambiguous once written, else Transient
//	a cause matching portico.ErrLayerTimeout)
//
// Whether the request was written comes from net/http/httptrace's
// WroteRequest, observed by an SDK middleware. A failure before it was
// written (a failed dial, a context done first) has portico.Error.NotSent
// set, so a rate limiter gives the call's whole reservation back. A layer's timeout is told from
// the caller's cancel or deadline by its cause: a layer that bounds one attempt
// (package retry) ends the context with a cause matching
// portico.ErrLayerTimeout, so that the adapter reports the attempt as Ambiguous
// or Transient rather than as the caller's Canceled or Deadline.
//
// HTTP errors wrap a [*ProviderError] (status, type, code, param), which wraps
// the SDK's *openai.Error. Providers may echo the prompt in their error
// messages, so the message is left out of errors unless
// [Config.IncludeProviderMessage] is set.
//
// # Bounds
//
// A hostile or broken server cannot make one call hold unbounded memory or
// run past its context: every response body (an answer, an HTTP error, a
// whole event stream, an event that never ends) is cut at
// [Config.MaxResponseBytes], 64 MiB by default, and the SDK reads it under
// the caller's context, so a stream that never sends [DONE] ends with the
// context or at the byte limit, whichever comes first.
//
// # Rate-limit headers
//
// x-ratelimit-limit-*, x-ratelimit-remaining-* and x-ratelimit-reset-* for
// requests and tokens are parsed by [ParseRateLimit] into
// [portico.RateLimit] on Response.RateLimit and Error.RateLimit, for package
// ratelimit to adopt the provider's view. [ParseRetryAfter] and [ParseReset]
// are the parsers, pure and fuzzed.
package openai
