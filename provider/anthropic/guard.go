package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/protect"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// Protect returns an anthropic-sdk-go option that puts g's layers around
// every HTTP request the client makes, whatever the endpoint (messages,
// token counting, batches, files, models), and turns the SDK's own retries
// off: one layer owns retries. Errors are classified as the adapter
// classifies them (its doc's table); usage counts cache reads and writes as
// the adapter does. A failure the provider stated reaches the caller as the
// SDK's own error (an *anthropic.Error), marked x-should-retry: false; a
// refusal of a layer (a limiter, an open breaker) or a transport failure as
// the layer's *portico.Error.
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
	var b errorBody
	_ = json.Unmarshal(body, &b) // a body that is not an error object classifies by its status
	return classified(rules.Hints(&portico.Error{Status: status}, h), b.providerError(status), b.Error.Message, h, false)
}

// guardUsage reads the usage of a message (or of a token count: its
// input_tokens) as the adapter maps it.
func guardUsage(body []byte) (portico.Usage, bool) {
	var b struct {
		Model string `json:"model"`
		Usage *struct {
			Input         int64 `json:"input_tokens"`
			Output        int64 `json:"output_tokens"`
			CacheWrite    int64 `json:"cache_creation_input_tokens"`
			CacheRead     int64 `json:"cache_read_input_tokens"`
			CacheCreation struct {
				OneHour int64 `json:"ephemeral_1h_input_tokens"`
			} `json:"cache_creation"`
		} `json:"usage"`
		InputTokens *int64 `json:"input_tokens"`
	}
	if json.Unmarshal(body, &b) != nil {
		return portico.Usage{}, false
	}
	switch {
	case b.Usage != nil:
		u := b.Usage
		return usage(b.Model, u.Input, u.CacheWrite, u.CacheCreation.OneHour, u.CacheRead, u.Output), true
	case b.InputTokens != nil:
		return portico.Usage{InputTokens: int(*b.InputTokens)}, true
	}
	return portico.Usage{}, false
}

// guardMaxTokens reads N_max from a request body.
func guardMaxTokens(body []byte) int {
	if !bytes.Contains(body, []byte(`"max_tokens"`)) {
		return 0
	}
	var b struct {
		MaxTokens int `json:"max_tokens"`
	}
	if json.Unmarshal(body, &b) != nil {
		return 0
	}
	return b.MaxTokens
}
