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
// function tools; a call's arguments, their text in a string as OpenAI
// sends them or the object itself as llama.cpp's server and TGI may, become
// the object's text in ToolCall.Arguments. Request.Schema becomes
// response_format json_schema with its strict flag; MaxOutputTokens becomes
// max_completion_tokens (max_tokens with [Config.LegacyMaxTokens]);
// Request.Extra keys the SDK knows (temperature, top_p, seed, stop, ...)
// become typed parameters and the rest are set on the JSON body unchanged
// (model, messages, stream and stream_options are refused: the adapter owns
// them).
//
// # Prompt caching and usage
//
// OpenAI caches every prompt of 1,024 tokens or more by itself
// (https://platform.openai.com/docs/guides/prompt-caching); a request that
// marks a cache breakpoint ([portico.CacheTTL]) opts its session in to
// prompt_cache_key, set to Identity.CacheKey (a digest of SessionID), so
// that the session's calls reach the same cache; a prompt_cache_key in
// Extra wins. Usage.CachedInputTokens is
// prompt_tokens_details.cached_tokens (a part of prompt_tokens, billed at
// the cached input price), Usage.ReasoningTokens
// completion_tokens_details.reasoning_tokens (a part of completion_tokens,
// billed as output). OpenAI's token limits count cached tokens as any
// other (caching lowers the price, not the tokens per minute), so
// LimitExemptTokens stays 0.
//
// # Documents and audio
//
// In chat completions a document part ([portico.Media]) becomes a file
// part (a PDF's data as a data: URL in file_data, or a file_id), a
// plain-text document its text, and audio data an input_audio part (WAV or
// MP3). A document by URL, or audio by URL, file id or another format, is
// refused before sending, as Incompatible: another route may read it.
//
// # The Responses API
//
// [NewResponses] makes a [Responses] model of OpenAI's Responses API
// (client.Responses, POST /v1/responses) over the same SDK options. Its
// messages become input items (a system message a system input message,
// an assistant's tool calls function_call items, a tool message a
// function_call_output naming the call's id), tools function tools with
// strict false, Request.Schema text.format json_schema with its strict
// flag, MaxOutputTokens max_output_tokens. A streamed response is read by
// its event types: response.output_text.delta reaches OnChunk, a function
// call's output_item.added and its response.function_call_arguments.delta
// reach it as empty chunks, and every other event (response.created, a
// reasoning summary delta, an item's boundary) is progress only, so an
// error event or response.failed after response.created is an error like
// any before the first chunk: a fallback group moves on. Its errors are
// classified by the table below: an error event and a failed response's
// error object by their code (the Responses API's own codes are in
// dialect.go) and message. A response cut by max_output_tokens (status
// incomplete) finishes with portico.FinishLength.
//
// Request.Reasoning becomes reasoning.effort (its Level) with
// reasoning.summary "auto". Each reasoning item of the answer is a
// portico.Thought of [ResponsesDialect]: its summary as Text, its
// encrypted content as Signature. An assistant message's Thoughts of that
// dialect are sent back as reasoning items before the message's text and
// function calls, as the model made them; another provider's Thoughts
// are left out.
//
// # Keeping state
//
// By default nothing is kept at OpenAI: a Responses model sends "store":
// false, every request carries the whole conversation, and a request that
// reasons asks for "include": ["reasoning.encrypted_content"], so that its
// reasoning items come back encrypted and go back in the next turn's
// input (a reasoning item without its encrypted content is then left out:
// OpenAI could not find it).
//
// With [ResponsesConfig.Store] each response is kept at OpenAI and the
// answer's last Thought, of Kind "response", names it. The route that
// holds it uses it: a request whose conversation carries such a Thought
// of the route's own dialect is sent with previous_response_id and only
// the messages after that answer (and reasoning items go back by their
// id). The state lives in one OpenAI organization, as encrypted reasoning
// does, so a Thought's Dialect carries [ResponsesConfig].Account: a route
// of another account, or another provider, leaves the Thoughts out and is
// sent the whole conversation, which every route's caller keeps
// (Response.Message), so a fallback group can still move on when the
// route that holds the state fails. A caller that sends only new messages
// with its own Request.Extra["previous_response_id"] must send them to
// that route itself.
//
// # Reasoning
//
// [Model] sends Request.Reasoning as reasoning_effort
// ([portico.Reasoning.Level]: the effort, or the least one whose budget
// covers Budget), and reads usage.completion_tokens_details.reasoning_tokens
// as Usage.ReasoningTokens. The reasoning text OpenAI-compatible servers
// add to a message or delta (reasoning_content: DeepSeek, vLLM, SGLang;
// reasoning: OpenRouter, Groq) becomes a Thought of [ChatDialect]; streamed,
// it reaches OnChunk as Chunk.Reasoning only when Reasoning.Stream asks,
// and is progress otherwise. Chat Completions takes no reasoning back: such
// Thoughts are never sent. [Responses] round-trips OpenAI's encrypted
// reasoning items.
//
// # One layer owns retries
//
// The SDK retries twice by default. [New] turns that off
// (option.WithMaxRetries(0), appended after the caller's options and again on
// every call), so that each Generate is exactly one HTTP request and the
// retry layer above (package retry) owns every retry and counts it against
// its budget. Retries at several layers multiply: three layers of three
// attempts make 27 calls to a sick server (Google's SRE book, "Addressing
// Cascading Failures"; the AWS Builders' Library, "Timeouts, retries, and
// backoff with jitter").
//
// # Error classes
//
// Every error is a [*portico.Error], classified once here so that the layers
// above act on the class alone. HTTP errors are read in every
// OpenAI-compatible server's dialect (OpenAI, Azure OpenAI, vLLM, SGLang,
// Hugging Face TGI, Ollama, llama.cpp, LM Studio, Groq, Together, Fireworks,
// OpenRouter, DeepSeek, Mistral: the shapes and wordings, with their
// sources, are in dialect.go):
//
//	context overflow, any status or stream      Incompatible, Reason "context window"
//	429                                         RateLimited, RetryAfter from retry-after-ms,
//	                                            else retry-after (seconds or HTTP-date)
//	429 that says the server is overloaded      Transient
//	401, 403 (credentials), 404 (model or       Unusable: this route cannot serve now,
//	deployment), 402 or insufficient_quota      another may
//	413, or a 429 "Request too large" (bigger   Incompatible, Reason "request too large"
//	than the whole tokens-per-minute limit)
//	400 code content_filter (Azure's prompt     Incompatible, Reason "content filtered":
//	filter), 403 "requires moderation"          another provider's policy may answer
//	(OpenRouter's moderation)
//	408, 409, 424, 498, 5xx                     Transient
//	other 400, 422, 4xx (an invalid parameter,  Incompatible: this provider refuses it,
//	Groq's tool_use_failed)                     another may not (never Permanent: see
//	                                            below)
//	x-should-retry: true / false                overrides: true makes a class that is not
//	                                            retryable Transient, false makes a
//	                                            retryable one Incompatible (advice about
//	                                            the request: not retried, moves on),
//	                                            marked portico.ErrUnanswered: a breaker
//	                                            counts only a run of them (5 in a row)
//	error inside an HTTP 200 answer (a stream's  what its message, code or type say, else
//	error event or "error:" line, an error      the status its numeric code states, else
//	object as the whole body, a choice whose    Transient
//	finish_reason is "error", as OpenRouter's)
//	the client refused to send it (a base       Unusable: the route's configuration;
//	URL that does not parse, a middleware)      the body was checked before
//	connection failed before the request        Transient
//	was written
//	timeout or reset after it was written       Ambiguous (it may have run and been billed)
//	a stream that ends inside an event          Ambiguous, wrapping io.ErrUnexpectedEOF
//	(cut mid-line, or an event without
//	its blank line)
//	a 200 body that is not a valid completion   InvalidResponse wrapping portico.ErrMalformed
//	(JSON null, fields of the wrong type, no
//	choices, no finish reason, streamed or not)
//	answer past Config.MaxResponseBytes         InvalidResponse wrapping ErrTooLarge
//	(an error body that long: its status's class, wrapping ErrTooLarge)
//	caller's ctx canceled / deadline            Canceled / Deadline
//	a Schema.Strict schema outside OpenAI's     Incompatible, Reason "strict schema",
//	strict subset (validate.StrictCompatible)   wrapping a validate.StrictError that
//	                                            lists every problem; nothing sent
//	a layer's own timeout (ctx ended with       Ambiguous once written, else Transient
//	a cause matching portico.ErrLayerTimeout)
//
// A provider's refusal is never Permanent ("wrong on every route"): a
// provider judges the body its own adapter wrote, in its own dialect, and
// another accepts what it refuses (Groq's tool_use_failed is its model's
// call, an Anthropic route refuses a system-only conversation OpenAI
// serves), so the request moves on to the next route that fits, is not
// retried on this one and no breaker counts it. Permanent is what Portico
// proves before sending: portico.Request.Validate, a request no adapter can
// encode ("request not encodable").
//
// A message is read before a code, so a numeric code ("code": 400, as vLLM
// and llama.cpp send) never hides a context overflow the message states.
// Whether the request was written comes from net/http/httptrace's
// WroteRequest, observed by an SDK middleware. A failure before it was
// written (a failed dial, a context done first) has portico.Error.NotSent
// set, so a rate limiter gives the call's whole reservation back. A layer
// that bounds one attempt (package retry) ends the context with a cause
// matching portico.ErrLayerTimeout, which tells its timeout from the caller's.
//
// HTTP errors wrap a [*ProviderError] (status, type, code, param), which wraps
// the SDK's *openai.Error. Providers may echo the prompt in their error
// messages, so the message is left out of errors unless
// [Config.IncludeProviderMessage] is set (the OWASP Logging Cheat Sheet's
// rule for data that must not reach logs).
//
// # Bounds
//
// A hostile or broken server cannot make one call hold unbounded memory or
// run past its context: every response body (an answer, an HTTP error, a
// whole event stream, an event that never ends) is cut at
// [Config.MaxResponseBytes], 64 MiB by default, at the transport, before
// the SDK decodes it. A Content-Length above the limit is refused before a
// byte is read; a body of unknown length is read in blocks, so refusing it
// costs about the limit; a stream stops at the limit. The SDK reads under
// the caller's context, so a stream that never sends [DONE] ends with the
// context or at the byte limit, whichever comes first.
//
// # Prefill
//
// A request whose last message is the assistant's asks, under
// [Config.Prefill], that the server continue that message rather than
// answer it: as a fallback group's continuation of a broken stream does
// (portico.ContinuePrefill). [PrefillContinueFinalMessage] is vLLM's,
// SGLang's and TGI's dialect, [PrefillPrefixFlag] DeepSeek's and Mistral's;
// llama.cpp's server and Ollama continue such a message as it is; OpenAI's
// own API does not, so its routes continue with the instruction
// (portico.ContinueInstruct). docs/openai-compatible.md has the table.
//
// # Rate-limit headers
//
// x-ratelimit-limit-*, x-ratelimit-remaining-* and x-ratelimit-reset-* for
// requests and tokens are parsed by [ParseRateLimit] into
// [portico.RateLimit] on Response.RateLimit and Error.RateLimit, for package
// ratelimit to adopt the provider's view. [ParseRetryAfter] and [ParseReset]
// are the parsers, pure and fuzzed.
//
// # OpenAI-compatible servers
//
// Point option.WithBaseURL at the server's /v1/ root. The options each needs
// and the features each lacks are in docs/openai-compatible.md; in short:
//
//	server        base URL                                   options
//	OpenAI        https://api.openai.com/v1/ (the default)   none
//	Azure OpenAI  azure.WithEndpoint(endpoint, api-version)   azure.WithAPIKey; the deployment is the model
//	vLLM, SGLang  http://HOST:8000/v1/, http://HOST:30000/v1/ tools need the server's tool-call parser
//	TGI           http://HOST:8080/v1/                       the model name is ignored
//	Ollama        http://localhost:11434/v1/                 LegacyMaxTokens; overflow is truncated, not refused
//	llama.cpp     http://HOST:8080/v1/                       tools need --jinja
//	LM Studio     http://localhost:1234/v1/                  LegacyMaxTokens
//	Groq          https://api.groq.com/openai/v1/            no logprobs, n = 1
//	Together      https://api.together.xyz/v1/               none
//	Fireworks     https://api.fireworks.ai/inference/v1/     none
//	OpenRouter    https://openrouter.ai/api/v1/              optional HTTP-Referer, X-Title headers
//	DeepSeek      https://api.deepseek.com/v1/               json_object only, no json_schema
//	Mistral       https://api.mistral.ai/v1/                 LegacyMaxTokens (max_completion_tokens is refused)
package openai
