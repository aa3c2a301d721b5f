package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// Guard configures [Protect]: the layers put around each HTTP request of
// an openai-go client.
type Guard struct {
	// Layers wrap every request, outermost first, as portico.Chain takes
	// them: a client or account limiter, a breaker, a retrier (its budgets,
	// backoff and Retry-After), a tracer. Each sees the request as a
	// Request whose Model, N_max (max_tokens, max_completion_tokens or
	// max_output_tokens) and Identity ([portico.WithIdentity] on the
	// call's context) come from it, and whose one text part is the JSON
	// body, which estimators count; a body that is not JSON (a file upload)
	// counts as no text. Nil layers are skipped.
	Layers []portico.Middleware
	// ChunkGap ends a stream whose reads return nothing for this long after
	// its first event (the layers bound the time to it); zero means no
	// bound.
	ChunkGap time.Duration
	// MaxResponseBytes bounds a whole answer's body, read before the SDK
	// sees it; zero means 64 MiB.
	MaxResponseBytes int64
	// Replicas are other deployments of the same API to fall back to, in
	// order, when the client's own endpoint fails (see [Replica]); BaseURL
	// is then the client's base URL, which each replica's replaces.
	BaseURL  string
	Replicas []Replica
	// Client sends the replicas' requests (the SDK sends only to its own
	// base URL's origin); nil means http.DefaultClient.
	Client *http.Client
}

// Replica is another deployment of the same API behind a [Guard]: its
// base URL, the headers it needs (its key), its own layers.
type Replica = adapt.Replica

// Protect returns an openai-go option that puts g's layers around every
// HTTP request the client makes, whatever the endpoint (chat completions,
// Responses, embeddings, files, batches, images), and turns the SDK's own
// retries off: one layer owns retries. Errors are classified as the
// adapter classifies them (its doc's table). A failure the provider stated
// reaches the caller as the SDK's own error (an *openai.Error), marked
// x-should-retry: false; a refusal of a layer (a limiter, an open breaker)
// or a transport failure as the layer's *portico.Error.
//
// A stream is timed by the layers up to its first event (retry's
// first-chunk timeout bounds it); its rest is read by the SDK under
// ChunkGap, and no layer retries it or learns its usage. Fallback to
// another provider is not possible at this level, since the SDK decodes
// one API's answer; route across providers with the adapter and package
// stack.
func Protect(g Guard) option.RequestOption {
	guard, err := adapt.NewGuard(adapt.Dialect{
		Rules:     &rules,
		Classify:  guardError,
		RateLimit: ParseRateLimit,
		Usage:     guardUsage,
		MaxTokens: guardMaxTokens,
	}, adapt.GuardConfig{Layers: g.Layers, Gap: g.ChunkGap,
		MaxBytes: adapt.MaxBytes(g.MaxResponseBytes, 64<<20), BaseURL: g.BaseURL, Replicas: g.Replicas, Client: g.Client})
	return adapt.Options(option.WithMaxRetries(0), option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if err != nil {
			return nil, err // a Guard that could not be built fails every request
		}
		return guard.Do(r, next)
	}))
}

// guardError classifies an HTTP error answer as the adapter does.
func guardError(status int, h http.Header, body []byte) *portico.Error {
	f := parseErrorBody(body)
	e := &portico.Error{Status: status, Code: f.Code, RateLimit: ParseRateLimit(h)}
	if d, ok := ParseRetryAfter(h, time.Now()); ok {
		e.RetryAfter = d
	}
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
