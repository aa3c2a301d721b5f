package openai

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
)

// errorFields is what the adapter reads of a provider's error object, in
// whichever shape an OpenAI-compatible server sends it.
type errorFields struct {
	Type, Code, Message, Param string
	// Status is an HTTP status the body itself states (a numeric "code",
	// TGI's "http_status_code", an API gateway's "statusCode"), or 0.
	Status int
	// Found is true when the body held an error at all.
	Found bool
}

// parseErrorBody reads an error body or error event. The shapes, by the
// servers that send them:
//
//   - {"error":{"message","type","param","code"}}: OpenAI, Azure OpenAI,
//     Groq, Together, Fireworks, DeepSeek, Ollama (openai/openai.go
//     NewError), vLLM since 0.9 (entrypoints/openai/protocol.py ErrorInfo),
//     llama.cpp (tools/server/server-common.cpp format_error_response, with
//     a numeric code), OpenRouter (openrouter.ai/docs/api-reference/errors:
//     numeric code, metadata), TGI's chat stream
//     (router/src/infer/mod.rs OpenaiErrorEvent: message, http_status_code);
//   - {"error":"text","error_type":"..."}: TGI (router/src/lib.rs
//     ErrorResponse), LM Studio, Ollama's native API;
//   - {"object":"error","message","type","param","code"}: vLLM before 0.9,
//     SGLang (srt/entrypoints/openai/protocol.py ErrorResponse), Mistral
//     (whose message may be an object of validation details);
//   - {"message":"..."} or {"statusCode":401,"message":"..."}: Mistral's
//     and Azure API Management's gateways;
//   - {"detail":...}: FastAPI validation errors (vLLM, SGLang).
func parseErrorBody(b []byte) errorFields {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return errorFields{}
	}
	var f errorFields
	if raw, ok := top["error"]; ok && string(raw) != "null" {
		f.Found = true
		var s string
		if json.Unmarshal(raw, &s) == nil {
			f.Message = s
			f.Type = text(top["error_type"])
			return f
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			f.Message = string(raw)
			return f
		}
		top = obj
	}
	for _, k := range [...]string{"message", "type", "code", "detail", "statusCode", "http_status_code"} {
		if _, ok := top[k]; ok {
			f.Found = true
		}
	}
	if !f.Found {
		return f
	}
	f.Message = text(top["message"])
	f.Message = cmp.Or(f.Message, text(top["detail"]))
	f.Type, f.Code, f.Param = text(top["type"]), text(top["code"]), text(top["param"])
	for _, k := range [...]string{"code", "http_status_code", "statusCode"} {
		if n, err := strconv.Atoi(text(top[k])); err == nil && n >= 400 && n <= 599 {
			f.Status = n
			break
		}
	}
	return f
}

// text returns a JSON string's value, a number's text, or the raw JSON of
// anything else but null ("" for null or nothing).
func text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// failure is what an error object says went wrong, whatever its status.
type failure uint8

const (
	unknown   failure = iota
	overflow          // the input does not fit the model's context window
	quota             // the account's credits or quota are spent
	rateLimit         // too many requests or tokens for now
	overload          // the server is overloaded, loading or failed
	auth              // the credentials are refused
	noModel           // the model or deployment does not exist here
	invalid           // a parameter of the request is wrong
	filtered          // the provider's content policy refused the prompt
	tooLarge          // the request exceeds a per-minute limit it can never fit
)

// overflowPhrases are the context-overflow wordings, lower-cased, with the
// servers that send them:
var overflowPhrases = [...]string{
	"maximum context length",            // OpenAI, Azure, vLLM, DeepSeek, OpenRouter ("This endpoint's maximum context length is"), SGLang, Mistral, Fireworks ("model maximum context length:")
	"context_length_exceeded",           // OpenAI's and Groq's code, in messages of proxies
	"longer than the model's context",   // SGLang srt/managers/tokenizer_manager.py, Together: "The input (N tokens) is longer than the model's context length (M tokens)."
	"longer than the maximum model len", // vLLM: "The decoder prompt (length N) is longer than the maximum model length of M"
	"longer than the context length",    // Ollama llm/llama_server.go: "the prompt is longer than the context length currently available to the model"
	"exceeds the available context",     // llama.cpp tools/server/server-context.cpp: "the request exceeds the available context size, try increasing it"
	"exceeds context size",              // llama.cpp: "request (N tokens) exceeds context size (M tokens)"
	"exceed_context_size",               // llama.cpp's type exceed_context_size_error
	"greater than the context length",   // LM Studio: "The number of tokens to keep from the initial prompt is greater than the context length"
	"when context the overflows",        // LM Studio (lmstudio-bug-tracker#546): "Trying to keep the first N tokens when context the overflows"
	"tokens + `max_new_tokens` must be", // TGI router/src/validation.rs: "`inputs` tokens + `max_new_tokens` must be <= N"
	"`inputs` must have less than",      // TGI router/src/validation.rs
	"reduce the length of the messages", // Groq, OpenAI: "Please reduce the length of the messages or completion."
	"prompt is too long",                // Fireworks, Ollama cloud: "The prompt is too long: N, model maximum context length: M"; Anthropic-compatible proxies
	"exceeded max context length",       // Ollama: "prompt too long; exceeded max context length by N tokens"
	"exceeds the context window",        // OpenAI Responses: "Your input exceeds the context window of this model"
	"string_above_max_length",           // OpenAI's code for one message too long
}

// phraseFailures map wordings other than overflow, lower-cased, to what
// they mean; the first that matches wins.
var phraseFailures = [...]struct {
	phrase string
	f      failure
}{
	{"request too large", tooLarge},                    // OpenAI 429, Groq 413: "Request too large for gpt-4o ... on tokens per min (TPM): Limit 30000, Requested 61337."
	{"insufficient_quota", quota},                      // OpenAI 429 code
	{"exceeded your current quota", quota},             // OpenAI 429 message
	{"insufficient balance", quota},                    // DeepSeek 402 (api-docs.deepseek.com/quick_start/error_codes)
	{"insufficient credits", quota},                    // OpenRouter 402 (openrouter.ai/docs/api-reference/errors)
	{"spending limit", quota},                          // Together 402 (docs.together.ai/docs/error-codes)
	{"deployment for this resource does not", noModel}, // Azure OpenAI 404 DeploymentNotFound
	{"not a valid model", noModel},                     // OpenRouter: "x is not a valid model ID"
	{"model not found", noModel},                       // LM Studio, generic
	{"no models loaded", noModel},                      // LM Studio
	{"requires moderation", filtered},                  // OpenRouter 403: "<model> requires moderation on <provider>. Your input was flagged for ..."
	{"rate limit", rateLimit},                          // Groq "Rate limit reached for model", Mistral "Requests rate limit exceeded", OpenAI
	{"too many requests", rateLimit},                   // generic 429 text
	{"overloaded", overload},                           // OpenAI "The engine is currently overloaded", TGI "Model is overloaded", DeepSeek
	{"server busy", overload},                          // Ollama server/sched.go ErrMaxQueue
	{"loading model", overload},                        // llama.cpp 503 while the model loads
	{"no available", overload},                         // OpenRouter 503 "no available model provider"; SGLang router "No available workers"
	{"temporarily unavailable", overload},              // generic 503 text
	{"invalid api key", auth},                          // llama.cpp 401 "Invalid API Key", Groq
	{"incorrect api key", auth},                        // OpenAI 401 "Incorrect API key provided"
	{"access denied", auth},                            // Azure 401 "Access denied due to invalid subscription key"
	{"unauthorized", auth},                             // Mistral 401 {"message":"Unauthorized"}
	{"authentication fails", auth},                     // DeepSeek 401
}

// codeFailures map codes and types, lower-cased, to what they mean.
var codeFailures = map[string]failure{
	"context_length_exceeded":       overflow,  // OpenAI, Azure, Groq
	"string_above_max_length":       overflow,  // OpenAI: one message too long
	"exceed_context_size_error":     overflow,  // llama.cpp
	"insufficient_quota":            quota,     // OpenAI
	"rate_limit_exceeded":           rateLimit, // OpenAI, Groq, Azure
	"rate_limit_error":              rateLimit, // Anthropic-compatible
	"requests":                      rateLimit, // OpenAI's type of a request-rate 429
	"tokens":                        rateLimit, // OpenAI's and Groq's type of a token-rate 429
	"too_many_requests":             rateLimit,
	"overloaded":                    overload, // OpenAI stream errors, TGI error_type
	"overloaded_error":              overload,
	"server_error":                  overload, // OpenAI, llama.cpp 500, OpenRouter mid-stream
	"api_error":                     overload, // Ollama's type of a 5xx
	"internal_error":                overload,
	"internalservererror":           overload, // vLLM's type of a 500
	"service_unavailable":           overload,
	"serviceunavailableerror":       overload,
	"unavailable_error":             overload, // llama.cpp 503
	"engine_overloaded":             overload, // Together 503
	"over_capacity":                 overload, // Groq 503
	"capacity_exceeded":             overload, // Groq 498 flex tier
	"timeout":                       overload,
	"generation":                    overload, // TGI 424 "Request failed during generation"
	"incomplete_generation":         overload, // TGI 500
	"invalid_api_key":               auth,     // OpenAI 401
	"authentication_error":          auth,     // llama.cpp, Anthropic-compatible
	"permission_error":              auth,     // llama.cpp 403
	"permissiondenied":              auth,     // Azure
	"unauthorized":                  auth,
	"model_not_found":               noModel, // OpenAI 404
	"deploymentnotfound":            noModel, // Azure OpenAI 404
	"not_found_error":               noModel, // llama.cpp, Ollama 404
	"notfounderror":                 noModel, // vLLM 404
	"invalid_request_error":         invalid, // OpenAI, Groq, Mistral, Fireworks
	"badrequesterror":               invalid, // vLLM, SGLang
	"validation":                    invalid, // TGI error_type
	"invalid_request_message_error": invalid, // Mistral 422
	"invalid_parameter":             invalid,
	"content_filter":                filtered, // Azure OpenAI 400: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."
	// The Responses API's codes of a failed response (openai-go
	// responses.ResponseErrorCode): its policies refuse the prompt, a
	// search timed out, the request does not fit the account or an image.
	"invalid_prompt":                 filtered,
	"bio_policy":                     filtered,
	"misalignment_policy_violation":  filtered,
	"image_content_policy_violation": filtered,
	"vector_store_timeout":           overload,
	"data_residency_mismatch":        invalid,
	"invalid_image":                  invalid,
	"invalid_image_format":           invalid,
	"invalid_base64_image":           invalid,
	"invalid_image_url":              invalid,
	"image_too_large":                invalid,
	"image_too_small":                invalid,
	"image_parse_error":              invalid,
	"invalid_image_mode":             invalid,
	"image_file_too_large":           invalid,
	"unsupported_image_media_type":   invalid,
	"empty_image_file":               invalid,
	"failed_to_download_image":       invalid,
	"image_file_not_found":           invalid,
	"invalid_encrypted_content":      invalid, // a reasoning item's encrypted content another account or organization made
}

// recognise says what an error object means, from its message first (so
// that a numeric or generic code cannot hide a context overflow), then its
// code, then its type; unknown when none is known.
func recognise(f errorFields) failure {
	msg := strings.ToLower(f.Message)
	for _, p := range overflowPhrases {
		if strings.Contains(msg, p) {
			return overflow
		}
	}
	code, typ := codeFailures[strings.ToLower(f.Code)], codeFailures[strings.ToLower(f.Type)]
	for _, c := range [...]failure{code, typ} {
		if c == overflow || c == quota {
			return c
		}
	}
	// OpenAI: "The model `x` does not exist or you do not have access to
	// it"; vLLM: "The model `x` does not exist."
	if strings.Contains(msg, "does not exist") && strings.Contains(msg, "model") {
		return noModel
	}
	for _, p := range phraseFailures {
		if strings.Contains(msg, p.phrase) {
			return p.f
		}
	}
	return cmp.Or(code, typ) // unknown when neither is known
}
