// Package gemini makes a [portico.Model] of the Gemini API's generateContent
// and streamGenerateContent through Google's Go SDK, google.golang.org/genai.
// It is a module of its own (github.com/portico-llm/portico/provider/gemini),
// so that no other user of Portico downloads the SDK.
//
// # Usage
//
//	m, err := gemini.New(ctx, gemini.Config{Model: "gemini-2.5-flash"},
//		genai.ClientConfig{APIKey: os.Getenv("GEMINI_API_KEY")})
//	resp, err := m.Generate(ctx, &portico.Request{Messages: []portico.Message{
//		portico.Text(portico.RoleUser, "Say hi"),
//	}})
//
// The Gemini Developer API (an API key) is the default backend. For Vertex
// AI set Backend: genai.BackendVertexAI with Project and Location (Google's
// application default credentials, or Credentials, authenticate), or with an
// APIKey alone (Vertex AI's express mode).
//
// # Requests
//
// RoleSystem messages, wherever they are, become the systemInstruction.
// User messages are "user" contents: text parts, and images as inlineData
// (a data: URL, decoded) or fileData (any other absolute URI: a Files API
// URI, a gs:// URI on Vertex AI, an https: URL where the backend accepts
// one; the MIME type guessed from the extension). Assistant messages are
// "model" contents with their function calls; each run of RoleTool messages
// is one "user" content of functionResponse parts, each named after the
// call it answers (found by ToolCallID among the earlier calls) and
// carrying its output as a JSON object, or as {"output": text}.
//
// Tools become functionDeclarations with their JSON Schema as
// parametersJsonSchema. Request.Schema becomes responseMimeType
// "application/json" with the schema as responseJsonSchema, which takes a
// JSON Schema document as it is; responseSchema would need a lossy
// translation into an OpenAPI 3.0 subset. Gemini constrains decoding to the
// schema but ignores the keywords it does not support and has no strict
// flag, so a Schema with Strict set is sent the same way: declare a Gemini
// route's Capabilities.Schema as portico.SchemaJSON, not SchemaStrict, and
// check answers with package validate.
//
// MaxOutputTokens becomes maxOutputTokens. Request.Extra keys the SDK has
// fields for become those fields, in Gemini's spelling or the snake_case
// other providers use: temperature, topP/top_p, topK/top_k, seed,
// stopSequences/stop, presencePenalty, frequencyPenalty, thinkingConfig (a
// genai.ThinkingConfig; a map passes through as JSON), candidateCount (1
// only: more candidates would be billed and dropped). safetySettings,
// toolConfig, cachedContent, labels and serviceTier go to the top level of
// the request body; every other key into its generationConfig, as is. The
// keys the adapter sets itself are refused.
//
// # Answers
//
// The first candidate is read: its text parts (thought parts left out) are
// Response.Text and its functionCall parts Response.ToolCalls. A call's
// ToolCall.ID is Gemini's id when it sent one, otherwise
// "gemini_call_<i>" (an ID every provider takes, for a fallback), which the
// adapter takes back to no id when the call and its
// result are sent back. Usage counts promptTokenCount plus
// toolUsePromptTokenCount as input, candidates plus thoughtsTokenCount as
// output (thoughtsTokenCount as Usage.ReasoningTokens),
// cachedContentTokenCount as cached. Streamed, each text part reaches
// OnChunk as it arrives, and each function call an empty Chunk. Text
// passes through byte for byte as the SDK decoded it.
//
// # Documents and audio
//
// Document and audio parts ([portico.Media]) become inlineData (their
// data, with the media type) or fileData (fileUri: the file id, else the
// URL), as for images: PDF, plain text and audio are read both ways
// (https://ai.google.dev/gemini-api/docs/document-processing,
// https://ai.google.dev/gemini-api/docs/audio). A route declares
// ModalityDocument and ModalityAudio when its model reads them.
//
// # Prompt caching
//
// Gemini 2.5 and later models cache prompts implicitly
// (https://ai.google.dev/gemini-api/docs/caching, "Implicit caching"), so
// cache breakpoints ([portico.CacheTTL]) are left out of the request: a
// request that marks them is served as one that does not. Cache hits are
// cachedContentTokenCount, billed at the context-caching price
// ([portico.Capabilities].CachedInputPrice); explicit caches
// (cachedContent) are not made. No documented exemption takes cached
// tokens out of Gemini's token limits, so LimitExemptTokens stays 0.
//
// # Reasoning
//
// Request.Reasoning sets thinkingConfig: includeThoughts, and
// thinkingBudget [portico.Reasoning.Tokens] when positive (else the
// model's dynamic budget). Thought parts become Response.Thoughts of
// [Dialect] "gemini", kind "thought" (their summary text, a run of them
// one Thought), and so do thought signatures: kind "functionCall", ID the
// call's ToolCall.ID, for a signed function call (Gemini 3 refuses a
// conversation that drops it), kind "text" for a signed text part. Sent
// back from Message.Thoughts, a signature goes on its call or on the
// message's last text part, and a signed thought part before the text;
// unsigned summaries and other dialects' thoughts are left out. A
// ToolCall.ID that carries a signature (as this adapter made them before)
// is still read. Streamed, thought parts reach OnChunk as Chunk.Reasoning
// only when Reasoning.Stream asks, and are progress otherwise.
//
// Finish reasons:
//
//	STOP                                       stop (tool_calls with function calls)
//	MAX_TOKENS, CONTINUATION                   length: the answer is cut
//	SAFETY, RECITATION, BLOCKLIST,             content_filter: an answer came back,
//	PROHIBITED_CONTENT, SPII, IMAGE_SAFETY,    withheld in part; package validate
//	IMAGE_PROHIBITED_CONTENT, IMAGE_RECITATION decides whether to accept it
//	MALFORMED_FUNCTION_CALL,                   InvalidResponse, Code the reason,
//	UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS  Usage what was billed: the model's
//	                                           output broke the contract; a retry
//	                                           (RetryInvalidResponse) or another
//	                                           route may do better
//	LANGUAGE, OTHER, NO_IMAGE, ...             passed through unchanged
//	none, FINISH_REASON_UNSPECIFIED            InvalidResponse wrapping ErrMalformed
//
// A blocked prompt (HTTP 200, promptFeedback.blockReason, no candidates) is
// an [portico.Incompatible] error with Code the block reason and Usage the
// prompt's tokens: this route's filters refuse this prompt and will again,
// so retrying it here is useless, but another provider's may not (a Vertex
// AI blocklist or Model Armor policy is the route's own), and the route is
// healthy, so no breaker counts it. Permanent would forbid that fallback;
// a Response with finish content_filter and no text would be retried.
//
// # One layer owns retries
//
// The SDK retries when HTTPOptions.RetryOptions is set, and by default
// re-sends a request whose answer stopped with a continuation token
// (AutomaticContinuation). [New] drops RetryOptions and every call turns
// continuation off, so that each Generate is exactly one HTTP request and
// the retry layer above (package retry) owns every retry and counts it
// against its budget (Google SRE book, "Addressing Cascading Failures":
// retry at one layer only). net/http does not replay the POST either.
//
// # Error classes
//
// Google's errors are a google.rpc.Status: {"error":{"code","message",
// "status","details"}} (https://cloud.google.com/apis/design/errors), as an
// HTTP error body or as a data event inside a 200 stream. The details the
// adapter reads are google.rpc.RetryInfo (retryDelay, a protobuf Duration
// such as "37s": Gemini sends no Retry-After header), ErrorInfo (reason)
// and QuotaFailure (quotaId) (google/rpc/error_details.proto). Every error
// is a [*portico.Error] with Code the status name:
//
//	429 RESOURCE_EXHAUSTED                   RateLimited, RetryAfter from retryDelay
//	  with a violated daily quota (PerDay)   Unusable: it resets in hours
//	500 INTERNAL, 503 UNAVAILABLE,           Transient (504 as the openai adapter:
//	504 DEADLINE_EXCEEDED, other 5xx, 408,   the server gave up, it did not answer)
//	409 ABORTED
//	400 INVALID_ARGUMENT "The input token    Incompatible, Reason "context window"
//	count (N) exceeds the maximum number of
//	tokens allowed (M)." (Vertex AI: "...
//	but model only supports up to M")
//	413                                      Incompatible, Reason "request too large"
//	other 400, other 4xx                     Incompatible: this provider refuses it,
//	                                         another may not
//	400 reason API_KEY_INVALID, 400          Unusable: a fault of the route (its key,
//	FAILED_PRECONDITION (not offered where   project, region or model), not of the
//	the caller is), 401 UNAUTHENTICATED,     request
//	403 PERMISSION_DENIED, 404 NOT_FOUND
//	an error event inside a 200 stream       the class of the status it stands for;
//	                                         without one, Transient
//	the client refused to send it (a base    Unusable: the route's configuration;
//	URL that does not parse)                 the body was checked before
//	connection failed before the request     Transient
//	was written
//	timeout or reset after it was written    Ambiguous (it may have run and been billed)
//	a stream that ends inside an event       Ambiguous, wrapping io.ErrUnexpectedEOF
//	(cut mid-line, or an event without
//	its blank line)
//	a body that is not a response, no        InvalidResponse wrapping ErrMalformed
//	candidates, no finish reason
//	answer past Config.MaxResponseBytes      InvalidResponse wrapping ErrTooLarge
//	(an error body that long: its status's class)
//	caller's ctx canceled / deadline         Canceled / Deadline
//	a layer's own timeout (ctx ended with    Ambiguous once written, else Transient
//	a cause matching portico.ErrLayerTimeout)
//
// A failure before the request was written (a failed dial, a context done
// first) has portico.Error.NotSent set, so a rate limiter gives the call's
// whole reservation back.
//
// An error event after content has reached OnChunk is returned like any
// other; the layers above know a chunk passed and neither retry nor fall
// back. Whether the request was written comes from net/http/httptrace's
// WroteRequest, observed by the adapter's transport.
//
// HTTP and stream errors wrap a [*ProviderError], which wraps the SDK's
// genai.APIError. Google's messages may quote the request, and the SDK's
// own errors print whole bodies (and, from genai.NewClient, the API key),
// so their text is left out of errors unless [Config.IncludeProviderMessage]
// is set; codes and reasons are kept only when they read as identifiers.
//
// # Bounds
//
// A hostile or broken server cannot make one call hold unbounded memory or
// run past its context: every response body is cut at
// [Config.MaxResponseBytes], 64 MiB by default (the SDK alone would accept
// one event of 256 MiB; a larger Content-Length is refused before a byte is
// read, and a body of unknown length is read in blocks, so refusing it
// costs the limit once), and read under the caller's context. The SDK's
// stream decoder panics on a null candidate; the adapter turns any panic
// while a response is decoded into an InvalidResponse error (a panic of the
// caller's OnChunk passes through).
package gemini
