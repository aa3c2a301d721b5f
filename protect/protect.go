// Package protect configures the guard each provider adapter puts around
// the HTTP requests of a provider SDK a service already uses: its Protect
// (provider/openai and provider/anthropic: an SDK option; provider/gemini:
// an *http.Client for genai) takes a [Config]. The guard turns the SDK's
// own retries off and sends each request through the Config's layers, so
// that every endpoint of the SDK (chat, Responses, embeddings, files,
// batches) is limited, retried, broken and traced without changing a call;
// each adapter's Protect says how its provider's errors, usage and limits
// are read.
//
// A request reaches the layers as a [portico.Request] whose Model, N_max
// (the body's max_tokens, max_completion_tokens, max_output_tokens or
// generationConfig.maxOutputTokens) and Identity ([portico.WithIdentity] on
// the call's context) come from it, and whose one text part is the JSON
// body, which estimators count; a body that is not JSON (a file upload)
// counts as no text. A stream is timed by the layers up to its first event
// (retry's first-chunk timeout bounds it) and then by Config.ChunkGap; no
// layer retries it or learns its usage after that.
//
// Fallback to another provider is not possible at this level, since the
// SDK decodes one API's answers: route across providers with the adapters
// and package stack. Fallback across deployments of the same API is:
// Config.Replicas.
package protect

import (
	"cmp"
	"net/http"
	"net/url"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/rules"
)

// Config is what an adapter's Protect puts around an SDK's requests. The
// zero value passes every request through once, unguarded but for the
// SDK's retries, which are off.
type Config struct {
	// Layers wrap every request, outermost first, as portico.Chain takes
	// them: a client or account limiter, a breaker, a retrier (its budgets,
	// backoff and Retry-After), the tracer's Wrap and WrapAttempt. Nil
	// layers are skipped.
	Layers []portico.Middleware
	// ChunkGap ends a stream whose reads return nothing for this long after
	// its first event; zero means no bound, negative is an error.
	ChunkGap time.Duration
	// MaxResponseBytes bounds a whole answer's body, read before the SDK
	// sees it; zero means 64 MiB, negative means no bound.
	MaxResponseBytes int64
	// BaseURL is the client's own base URL, which each replica's replaces
	// in a request's URL; needed only with Replicas, and then an absolute
	// URL.
	BaseURL string
	// Replicas are other deployments of the same API, tried in order when
	// the client's own endpoint fails (see [Replica]).
	Replicas []Replica
	// Client sends the replicas' requests (the SDKs send only to their own
	// base URL's origin); nil means http.DefaultClient.
	Client *http.Client
}

// Replica is another deployment of the same API (an Azure OpenAI
// deployment, an OpenAI-compatible replica, the same API under another
// key). With replicas, the layers wrap a fallback group (package fallback)
// of the client's own endpoint, named "primary", and the replicas, each
// with its own cooldown and Layers; the group moves on as package fallback
// does (a 429 past its wait, a 5xx, a spent key).
type Replica struct {
	// Name names the replica's route in errors, logs and spans; it must be
	// unique and not "primary".
	Name string
	// BaseURL, an absolute URL, replaces the client's BaseURL in each
	// request's URL.
	BaseURL string
	// Header's values replace the request's headers of the same names (the
	// replica's key: "Authorization", or Azure's "api-key"); they never
	// reach logs, spans or errors.
	Header http.Header
	// Layers wrap the replica's calls alone, outermost first (a breaker per
	// deployment, say).
	Layers []portico.Middleware
}

// Validate returns nil when c can guard a client, else a [portico.Permanent]
// *portico.Error, NotSent, whose Reason starts with "protect:" and names
// the field: a negative ChunkGap, Replicas without an absolute BaseURL, or
// a replica without a Name or an absolute BaseURL, named "primary" or as
// another is. Each adapter's Protect calls it when it is built.
func (c Config) Validate() error {
	return invalid(cmp.Or(rules.First(
		rules.If(c.ChunkGap < 0, "negative Config.ChunkGap "+c.ChunkGap.String()),
		rules.If(len(c.Replicas) > 0 && !absolute(c.BaseURL), "Config.Replicas need the client's absolute Config.BaseURL"),
	), checkReplicas(c.Replicas)))
}

// checkReplicas returns Validate's reason against the first of rs without
// a Name or an absolute BaseURL, or named "primary" or as another is.
func checkReplicas(rs []Replica) error {
	seen := map[string]bool{"primary": true}
	for _, r := range rs {
		if err := rules.First(
			rules.If(r.Name == "" || !absolute(r.BaseURL), "a Replica needs a Name and an absolute BaseURL"),
			rules.If(seen[r.Name], "Replica name "+r.Name+" is \"primary\" or not unique"),
		); err != nil {
			return err
		}
		seen[r.Name] = true
	}
	return nil
}

// absolute reports whether s parses as a URL with a scheme and a host.
func absolute(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// invalid is Validate's error of the broken rule err, nil for nil.
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return &portico.Error{Class: portico.Permanent, NotSent: true, Reason: "protect: " + err.Error()}
}
