package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

// dialect is one error shape of one OpenAI-compatible server, sent by the
// fake exactly as that server sends it and read through the real SDK.
type dialect struct {
	family, name string
	fault        fakeopenai.Fault
	class        portico.Class
	reason       string        // the Error's Reason, when it matters ("context window")
	retryAfter   time.Duration // exact RetryAfter
}

// status is an HTTP error with the given body and headers (name, value, ...).
func status(code int, body string, header ...string) fakeopenai.Fault {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: code, Body: body, Header: h}
}

// event is an error event with the given data after two chunks of content.
func event(data string) fakeopenai.Fault {
	return fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, AfterChunks: 2, Body: data}
}

// sseBody is a raw 200 event stream.
func sseBody(body string) fakeopenai.Fault {
	return status(200, body, "Content-Type", "text/event-stream")
}

const okChunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n"

// The error dialects of the servers users put behind provider/openai. Each
// wording and shape is the server's own, from the source cited (see also
// dialect.go): what a context overflow, a rate limit, an overload, refused
// credentials, a missing model and an invalid parameter look like.
var dialects = []dialect{
	// OpenAI: platform.openai.com/docs/guides/error-codes; openai-go's
	// apierror; x-should-retry is what OpenAI's SDKs obey.
	{"openai", "context overflow", status(400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`), portico.Incompatible, "context window", 0},
	{"openai", "insufficient quota", status(429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, "x-should-retry", "false"), portico.Unusable, "", 0},
	// A request bigger than the organisation's whole tokens-per-minute limit:
	// a 429 that no wait cures (openai-python issues; the same wording as
	// Groq's 413 below), the request's, not the route's load.
	{"openai", "request too large for the TPM", status(429, `{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 61337. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`), portico.Incompatible, "request too large", 0},
	{"openai", "rate limit", status(429, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, "retry-after-ms", "2000"), portico.RateLimited, "", 2 * time.Second},
	{"openai", "invalid api key", status(401, `{"error":{"message":"Incorrect API key provided: sk-x. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`), portico.Unusable, "", 0},
	{"openai", "overloaded", status(503, `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`), portico.Transient, "", 0},
	{"openai", "server error event", event(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`), portico.Transient, "", 0},
	{"openai", "error object as a 200 body", status(200, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`), portico.Transient, "", 0},

	// Azure OpenAI: learn.microsoft.com/azure/ai-services/openai/reference;
	// DeploymentNotFound as in MicrosoftDocs/azure-docs#114013.
	{"azure", "context overflow", status(400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`), portico.Incompatible, "context window", 0},
	{"azure", "deployment not found", status(404, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`), portico.Unusable, "", 0},
	{"azure", "token rate limit", status(429, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`, "retry-after", "6"), portico.RateLimited, "", 6 * time.Second},
	{"azure", "gateway 401", status(401, `{"statusCode":401,"message":"Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired."}`), portico.Unusable, "", 0},
	{"azure", "content filter", status(400, `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400}}`), portico.Incompatible, "", 0},

	// vLLM: vllm/entrypoints/openai/protocol.py (ErrorResponse; ErrorInfo
	// since 0.9) and engine/serving.py create_error_response,
	// create_streaming_error_response.
	{"vllm", "max tokens past the window", status(400, `{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778).","type":"BadRequestError","param":null,"code":400}}`), portico.Incompatible, "context window", 0},
	{"vllm", "context overflow before 0.9", status(400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`), portico.Incompatible, "context window", 0},
	{"vllm", "model not found", status(404, `{"error":{"message":"The model `+"`llama`"+` does not exist.","type":"NotFoundError","param":"model","code":404}}`), portico.Unusable, "", 0},
	{"vllm", "overflow event with a numeric code", event(`{"error":{"message":"The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that ` + "`max_model_len`" + ` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}`), portico.Incompatible, "context window", 0},
	{"vllm", "generation error event", event(`{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`), portico.Transient, "", 0},
	{"vllm", "invalid parameter", status(400, `{"error":{"message":"temperature must be non-negative, got -1.0.","type":"BadRequestError","param":null,"code":400}}`), portico.Incompatible, "", 0},

	// SGLang: python/sglang/srt/managers/tokenizer_manager.py (the wordings)
	// and srt/entrypoints/openai/protocol.py ErrorResponse (the shape).
	{"sglang", "input longer than the context", status(400, `{"object":"error","message":"The input (5000 tokens) is longer than the model's context length (4096 tokens).","type":"BadRequestError","param":null,"code":400}`), portico.Incompatible, "context window", 0},
	{"sglang", "total past the context, streamed", event(`{"error":{"object":"error","message":"Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a total of 5000 tokens: 4000 tokens from the input messages and 1000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.","type":"BadRequestError","param":null,"code":400}}`), portico.Incompatible, "context window", 0},
	{"sglang", "error chunk without an error key", sseBody(okChunk + `data: {"object":"error","message":"The input (5000 tokens) is longer than the model's context length (4096 tokens).","type":"BadRequestError","param":null,"code":400}` + "\n\n"), portico.Incompatible, "context window", 0},
	{"sglang", "invalid parameter", status(400, `{"object":"error","message":"Invalid request: top_p must be in (0, 1], got 2.0.","type":"BadRequestError","param":null,"code":400}`), portico.Incompatible, "", 0},

	// Hugging Face TGI: router/src/lib.rs ErrorResponse, router/src/infer/mod.rs
	// InferError (statuses in router/src/server.rs), router/src/validation.rs.
	{"tgi", "inputs plus max_new_tokens", status(422, "{\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`\",\"error_type\":\"validation\"}"), portico.Incompatible, "context window", 0},
	{"tgi", "model overloaded", status(429, `{"error":"Model is overloaded","error_type":"overloaded"}`), portico.Transient, "", 0},
	{"tgi", "inputs too long, streamed", event("{\"error\":{\"message\":\"Input validation error: `inputs` must have less than 4096 tokens. Given: 5000\",\"http_status_code\":422}}"), portico.Incompatible, "context window", 0},
	{"tgi", "invalid parameter", status(422, "{\"error\":\"Input validation error: `temperature` must be strictly positive\",\"error_type\":\"validation\"}"), portico.Incompatible, "", 0},
	{"tgi", "generation failed", status(424, `{"error":"Request failed during generation: Server error: CUDA out of memory","error_type":"generation"}`), portico.Transient, "", 0},

	// Ollama: openai/openai.go NewError, llm/llama_server.go, server/routes.go,
	// server/sched.go ErrMaxQueue.
	{"ollama", "prompt longer than the context", status(400, `{"error":{"message":"the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length","type":"invalid_request_error","param":null,"code":null}}`), portico.Incompatible, "context window", 0},
	{"ollama", "model not found", status(404, `{"error":{"message":"model 'llama3' not found","type":"not_found_error","param":null,"code":null}}`), portico.Unusable, "", 0},
	{"ollama", "server busy", status(503, `{"error":{"message":"server busy, please try again.  maximum pending requests exceeded","type":"api_error","param":null,"code":null}}`), portico.Transient, "", 0},

	// llama.cpp server: tools/server/server-common.cpp format_error_response,
	// server-context.cpp, server.cpp server_sent_event(sink, "error", ...).
	{"llama.cpp", "exceeds the available context", status(400, `{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}`), portico.Incompatible, "context window", 0},
	{"llama.cpp", "loading model", status(503, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`), portico.Transient, "", 0},
	{"llama.cpp", "invalid api key", status(401, `{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}`), portico.Unusable, "", 0},
	{"llama.cpp", "error line in a stream", sseBody(okChunk + `error: {"code":500,"message":"Failed to decode","type":"server_error"}` + "\n\n"), portico.Transient, "", 0},
	{"llama.cpp", "overflow line in a stream", sseBody(`error: {"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}` + "\n\n"), portico.Incompatible, "context window", 0},

	// LM Studio (closed source): its wordings as reported in
	// lmstudio-ai/lmstudio-bug-tracker#546 and #2205.
	{"lmstudio", "context overflows", status(400, `{"error":"Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}`), portico.Incompatible, "context window", 0},
	{"lmstudio", "context overflow event", event(`{"error":"The number of tokens to keep from the initial prompt is greater than the context length. Try to load the model with a larger context length, or provide a shorter input"}`), portico.Incompatible, "context window", 0},
	{"lmstudio", "no model loaded", status(404, `{"error":{"message":"No models loaded. Please load a model in the developer page or use the `+"`lms load`"+` command.","type":"invalid_request_error","param":"model","code":"model_not_found"}}`), portico.Unusable, "", 0},

	// Groq: console.groq.com/docs/errors.
	{"groq", "reduce the length", status(400, `{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`), portico.Incompatible, "context window", 0},
	{"groq", "tokens per minute", status(429, "{\"error\":{\"message\":\"Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Used 5000, Requested 2000. Please try again in 10s.\",\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}", "retry-after", "10"), portico.RateLimited, "", 10 * time.Second},
	{"groq", "request too large for the tier", status(413, "{\"error\":{\"message\":\"Request too large for model `llama-3.1-8b-instant` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 38928, please reduce your message size and try again.\",\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}"), portico.Incompatible, "request too large", 0},
	// console.groq.com/docs/tool-use: the model's call did not parse; the
	// request is fine, another model (or route) may make the call.
	{"groq", "tool_use_failed", status(400, `{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=lookup{\"q\": }"}}`), portico.Incompatible, "", 0},
	{"groq", "flex capacity", status(498, `{"error":{"message":"Flex tier capacity exceeded. Please try again later.","type":"service_unavailable","code":"capacity_exceeded"}}`), portico.Transient, "", 0},

	// Together: docs.together.ai/docs/error-codes.
	{"together", "input longer than the context", status(400, `{"error":{"message":"The input (250000 tokens) is longer than the model's context length (200000 tokens).","type":"invalid_request_error","param":null,"code":null}}`), portico.Incompatible, "context window", 0},
	{"together", "engine overloaded", status(503, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":"engine_overloaded"}}`), portico.Transient, "", 0},
	{"together", "spending limit", status(402, `{"error":{"message":"The account associated with this API key has reached its maximum allowed monthly spending limit.","type":"invalid_request_error","param":null,"code":null}}`), portico.Unusable, "", 0},
	{"together", "model not available", status(404, `{"error":{"message":"Unable to access model llama-x. Please visit https://api.together.ai/models to view the list of supported models.","type":"invalid_request_error","param":null,"code":"model_not_available"}}`), portico.Unusable, "", 0},

	// Fireworks: docs.fireworks.ai (error object with "object":"error").
	{"fireworks", "prompt too long", status(400, `{"error":{"object":"error","type":"invalid_request_error","message":"The prompt is too long: 40000, model maximum context length: 32768"}}`), portico.Incompatible, "context window", 0},
	{"fireworks", "model not found", status(404, `{"error":{"object":"error","type":"invalid_request_error","message":"Model not found, inaccessible, and/or not deployed"}}`), portico.Unusable, "", 0},
	{"fireworks", "rate limit", status(429, `{"error":{"object":"error","type":"invalid_request_error","message":"rate limit exceeded, please try again later"}}`, "retry-after", "1"), portico.RateLimited, "", time.Second},
	{"fireworks", "invalid api key", status(401, `{"error":{"object":"error","type":"invalid_request_error","message":"The API key you provided is invalid."}}`), portico.Unusable, "", 0},

	// OpenRouter: openrouter.ai/docs/api-reference/errors (numeric code,
	// errors after a 200 "in the response body or as an SSE data event").
	{"openrouter", "endpoint context", status(400, `{"error":{"code":400,"message":"This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens (8000 of text input, 1000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically."}}`), portico.Incompatible, "context window", 0},
	{"openrouter", "insufficient credits", status(402, `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/credits"}}`), portico.Unusable, "", 0},
	{"openrouter", "provider error as a 200 body", status(200, `{"error":{"code":502,"message":"Provider returned error","metadata":{"provider_name":"x","raw":"upstream"}}}`), portico.Transient, "", 0},
	{"openrouter", "mid-stream error", event(`{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","provider":"p","error":{"code":"server_error","message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`), portico.Transient, "", 0},
	{"openrouter", "no provider", status(503, `{"error":{"code":503,"message":"No allowed providers are available for the selected model."}}`), portico.Transient, "", 0},

	// DeepSeek: api-docs.deepseek.com/quick_start/error_codes.
	{"deepseek", "context overflow", status(400, `{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (65000 in the messages, 5000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`), portico.Incompatible, "context window", 0},
	{"deepseek", "insufficient balance", status(402, `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`), portico.Unusable, "", 0},
	{"deepseek", "server overloaded", status(503, `{"error":{"message":"Server overloaded, please try again later.","type":"server_error","param":null,"code":null}}`), portico.Transient, "", 0},
	{"deepseek", "invalid parameters", status(422, `{"error":{"message":"Invalid parameters: top_p must be in (0, 1]","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`), portico.Incompatible, "", 0},

	// An "event: error" frame whose data is a bare message, as gateways
	// that speak Anthropic-style events send it.
	{"generic", "named error event, bare message", fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, AfterChunks: 1, Event: "error", Body: `{"message":"Overloaded","code":529}`}, portico.Transient, "overloaded", 0},
	{"generic", "named error event before content", fakeopenai.Fault{Kind: fakeopenai.FaultStreamError, Event: "error", Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, portico.Transient, "overloaded", 0},

	// Mistral: docs.mistral.ai/api (shapes as in mistralai/mistral-vibe#188
	// and editor-code-assistant/eca#231).
	{"mistral", "too large for model", status(400, `{"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_error","param":null,"code":null}`), portico.Incompatible, "context window", 0},
	{"mistral", "unauthorized", status(401, `{"message":"Unauthorized","request_id":"a1b2"}`), portico.Unusable, "", 0},
	{"mistral", "rate limit", status(429, `{"message":"Requests rate limit exceeded"}`), portico.RateLimited, "", 0},
	{"mistral", "extra inputs", status(422, `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted","input":32000}]},"type":"invalid_request_message_error","param":null,"code":null}`), portico.Incompatible, "", 0},
}

// TestDialects sends every shape through the real SDK and checks its class,
// reason, status and Retry-After, that exactly one request was made, that
// the provider's message stays out of the error string, and that an error
// streamed and the same error as a 200 body read alike.
func TestDialects(t *testing.T) {
	cfg := fakeopenai.Config{}
	for i, d := range dialects {
		cfg.Models = append(cfg.Models, fakeopenai.ModelConfig{Name: modelName(i), Script: []fakeopenai.Fault{d.fault}})
	}
	s, m := start(t, cfg, openai.Config{})
	families := map[string]int{}
	for i, d := range dialects {
		t.Run(d.family+"/"+d.name, func(t *testing.T) {
			req := userReq(modelName(i), "hello")
			stream := d.fault.Kind == fakeopenai.FaultStreamError || d.fault.Header.Get("Content-Type") == "text/event-stream"
			if stream {
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			resp, err := m.Generate(context.Background(), req)
			if resp != nil || err == nil {
				t.Fatalf("Generate = %v, %v; want an error", resp, err)
			}
			pe := asError(t, err)
			wantStatus := d.fault.Status
			if d.fault.Kind == fakeopenai.FaultStreamError {
				wantStatus = 200
			}
			if pe.Class != d.class || pe.Status != wantStatus || pe.RetryAfter != d.retryAfter || d.reason != "" && pe.Reason != d.reason {
				t.Errorf("Generate error = class %v status %d retry-after %v reason %q (%v), want %v %d %v %q",
					pe.Class, pe.Status, pe.RetryAfter, pe.Reason, err, d.class, wantStatus, d.retryAfter, d.reason)
			}
			var prov *openai.ProviderError
			if !errors.As(err, &prov) || prov.Message != "" || prov.InStream != (wantStatus == 200) {
				t.Errorf("ProviderError = %+v, want one without its message, InStream %v", prov, wantStatus == 200)
			}
			if msg := messageOf(d.fault.Body); len(msg) >= 12 && strings.Contains(err.Error(), msg[:12]) {
				t.Errorf("error string %q carries the provider's message %q", err, msg)
			}
			if n := s.Count(modelName(i)); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
		families[d.family]++
	}
	for _, f := range []string{"openai", "azure", "vllm", "sglang", "tgi", "ollama", "llama.cpp", "lmstudio", "groq", "together", "fireworks", "openrouter", "deepseek", "mistral"} {
		if families[f] < 3 {
			t.Errorf("family %s has %d shapes, want at least 3", f, families[f])
		}
	}
}

// messageOf returns the message of an error body or event, or "".
func messageOf(body string) string {
	if i := strings.LastIndex(body, "data: "); i >= 0 && !strings.HasPrefix(body, "{") {
		body = body[i+len("data: "):]
	} else if i := strings.Index(body, "error: "); i >= 0 && !strings.HasPrefix(body, "{") {
		body = body[i+len("error: "):]
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
	}
	_ = json.NewDecoder(strings.NewReader(body)).Decode(&v)
	var s string
	if json.Unmarshal(v.Error, &s) == nil {
		return s
	}
	var inner struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
		return inner.Message
	}
	_ = json.Unmarshal(v.Message, &s)
	return s
}

func modelName(i int) string { return "dialect-" + string(rune('a'+i/26)) + string(rune('a'+i%26)) }
