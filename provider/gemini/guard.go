package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"

	"google.golang.org/genai"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/protect"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// Protect returns a copy of base (nil: http.DefaultClient) whose transport
// puts g's layers (package protect) around every request a genai client
// makes with it (genai.ClientConfig.HTTPClient): generateContent,
// streamGenerateContent, embedContent, countTokens, files. genai retries
// only when HTTPOptions.RetryOptions is set; leave it unset, since one layer
// owns retries. Errors are classified as the adapter classifies them (its
// doc's table, Google's RetryInfo read as Retry-After). A failure the
// provider stated reaches the caller as genai's own error (a
// genai.APIError); a refusal of a layer (a limiter, an open breaker) or a
// transport failure as the layer's *portico.Error.
// Package protect says how streams, replicas and fallback behave. Protect
// panics with g.Validate's error when g is invalid (a programmer error);
// call g.Validate first for a Config read at run time.
func Protect(g protect.Config, base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	guard := adapt.MustGuard(adapt.Dialect{
		Rules:     &rules,
		Classify:  guardError,
		Usage:     guardUsage,
		MaxTokens: guardMaxTokens,
	}, g)
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c := *base
	c.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		return guard.Do(r, next.RoundTrip)
	})
	return &c
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

// RoundTrip calls f(r).
func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// guardError classifies Google's error object, {"error": {"code",
// "message", "status", "details"}}, as the adapter does.
func guardError(status int, _ http.Header, body []byte) *portico.Error {
	var b struct {
		Error genai.APIError `json:"error"`
	}
	_ = json.Unmarshal(body, &b) // a body that is not an error object classifies by its status
	pe := newProviderError(b.Error, status, false, false)
	e := &portico.Error{Status: status, Code: pe.RPCStatus, RetryAfter: pe.RetryDelay, Err: pe}
	e.Class, e.Reason = classifyStatus(status, pe.RPCStatus, pe.Reason, b.Error.Message, pe.QuotaIDs)
	return e
}

// guardUsage reads the usageMetadata of an answer as the adapter maps it.
func guardUsage(body []byte) (portico.Usage, bool) {
	var b struct {
		Usage *genai.GenerateContentResponseUsageMetadata `json:"usageMetadata"`
	}
	if json.Unmarshal(body, &b) != nil || b.Usage == nil {
		return portico.Usage{}, false
	}
	return usage(b.Usage), true
}

// guardMaxTokens reads N_max from a request body.
func guardMaxTokens(body []byte) int {
	if !bytes.Contains(body, []byte(`"maxOutputTokens"`)) {
		return 0
	}
	var b struct {
		Config struct {
			MaxOutputTokens int `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
	if json.Unmarshal(body, &b) != nil {
		return 0
	}
	return b.Config.MaxOutputTokens
}
