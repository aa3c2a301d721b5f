package openai

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/openai/openai-go/v3/option"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/protect"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// Protect returns an openai-go option that puts g's layers (package protect)
// around every HTTP request the client makes, whatever the endpoint (chat
// completions, Responses, embeddings, files, batches, images), and turns the
// SDK's own retries off: one layer owns retries. Errors are classified as
// the adapter classifies them (its doc's table). A failure the provider
// stated reaches the caller as the SDK's own error (an *openai.Error),
// marked x-should-retry: false; a refusal of a layer (a limiter, an open
// breaker) or a transport failure as the layer's *portico.Error.
// Package protect says how streams, replicas and fallback behave. Protect
// panics with g.Validate's error when g is invalid (a programmer error);
// call g.Validate first for a Config read at run time.
func Protect(g protect.Config) option.RequestOption {
	guard := adapt.MustGuard(adapt.Dialect{
		Rules:     &rules,
		Classify:  guardError,
		Usage:     guardUsage,
		MaxTokens: guardMaxTokens,
	}, g)
	return adapt.Options(option.WithMaxRetries(0), option.WithMiddleware(guard.Do))
}

// guardError classifies an HTTP error answer as the adapter does.
func guardError(status int, h http.Header, body []byte) *portico.Error {
	f := parseErrorBody(body)
	e := rules.Hints(&portico.Error{Status: status, Code: f.Code}, h)
	pe := &ProviderError{Status: status, Type: f.Type, Code: f.Code, Param: f.Param}
	e.Class, e.Reason, e.Err = classifyStatus(status, f, h.Get("x-should-retry"), pe)
	return e
}

// guardUsage reads the usage of an answer of chat completions (or
// embeddings: prompt_tokens) or of the Responses API (input_tokens).
func guardUsage(body []byte) (portico.Usage, bool) {
	var b struct {
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			InputTokens      int `json:"input_tokens"`
			OutputTokens     int `json:"output_tokens"`
			Prompt           struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			Input struct {
				Cached int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			Completion struct {
				Reasoning int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
			Output struct {
				Reasoning int `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &b) != nil || b.Usage == nil {
		return portico.Usage{}, false
	}
	u := b.Usage
	return portico.Usage{
		InputTokens:       max(u.PromptTokens, u.InputTokens),
		OutputTokens:      max(u.CompletionTokens, u.OutputTokens),
		CachedInputTokens: max(u.Prompt.Cached, u.Input.Cached),
		ReasoningTokens:   max(u.Completion.Reasoning, u.Output.Reasoning),
	}, true
}

// guardMaxTokens reads N_max from a request body of either API.
func guardMaxTokens(body []byte) int {
	if !bytes.Contains(body, []byte("max_")) {
		return 0
	}
	var b struct {
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
		MaxOutputTokens     int `json:"max_output_tokens"`
	}
	if json.Unmarshal(body, &b) != nil {
		return 0
	}
	return max(b.MaxTokens, b.MaxCompletionTokens, b.MaxOutputTokens)
}
