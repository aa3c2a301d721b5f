package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"google.golang.org/genai"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// Guard configures [Protect]: the layers put around each HTTP request of
// a genai client.
type Guard struct {
	// Layers wrap every request, outermost first, as portico.Chain takes
	// them: a client or account limiter, a breaker, a retrier (its budgets,
	// backoff and the retryDelay Google sends), a tracer. Each sees the
	// request as a Request whose Model (from the URL), N_max
	// (generationConfig.maxOutputTokens) and Identity
	// ([portico.WithIdentity] on the call's context) come from it, and
	// whose one text part is the JSON body, which estimators count. Nil
	// layers are skipped.
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

// Protect returns a copy of base (nil: http.DefaultClient) whose transport
// puts g's layers around every request a genai client makes with it
// (genai.ClientConfig.HTTPClient): generateContent, streamGenerateContent,
// embedContent, countTokens, files. genai retries only when
// HTTPOptions.RetryOptions is set; leave it unset, since one layer owns
// retries. Errors are classified as the adapter classifies them (its doc's
// table, Google's RetryInfo read as Retry-After). A failure the provider
// stated reaches the caller as genai's own error (a genai.APIError); a
// refusal of a layer (a limiter, an open breaker) or a transport failure
// as the layer's *portico.Error.
//
// A stream is timed by the layers up to its first event; its rest is read
// by the SDK under ChunkGap, and no layer retries it or learns its usage.
// Fallback to another provider is not possible at this level, since the
// SDK decodes one API's answer; route across providers with the adapter
// and package stack.
func Protect(g Guard, base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	guard, err := adapt.NewGuard(adapt.Dialect{
		Rules:     &rules,
		Classify:  guardError,
		Usage:     guardUsage,
		MaxTokens: guardMaxTokens,
	}, adapt.GuardConfig{Layers: g.Layers, Gap: g.ChunkGap,
		MaxBytes: adapt.MaxBytes(g.MaxResponseBytes, 64<<20), BaseURL: g.BaseURL, Replicas: g.Replicas, Client: g.Client})
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c := *base
	c.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		if err != nil {
			return nil, err // a Guard that could not be built fails every request
		}
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
