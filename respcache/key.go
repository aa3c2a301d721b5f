package respcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
)

// canonical is what a cache key covers: the scope and every field of a
// request that changes its answer. Limits on the way (Contract.Deadline,
// MaxCost, MaxInputTokens), the Identity beyond the scope, OnChunk and
// the flags that only steer layers are left out; the Contract's model
// classes are in, since they choose which model answers. Messages are
// encoded whole, so a field Message gains is in the key.
type canonical struct {
	Scope           string             `json:"scope"`
	Model           string             `json:"model"`
	Messages        []portico.Message  `json:"messages"`
	Tools           []portico.Tool     `json:"tools,omitempty"`
	Schema          *portico.Schema    `json:"schema,omitempty"`
	MaxOutputTokens int                `json:"max_output_tokens,omitempty"`
	Reasoning       *portico.Reasoning `json:"reasoning,omitempty"`
	Extra           json.RawMessage    `json:"extra,omitempty"`
	Prefix          string             `json:"prefix,omitempty"`
	ModelClasses    []string           `json:"model_classes,omitempty"`
}

// errUncacheable is the cause of a request that has no key: its Extra is
// not JSON (a NaN, a channel).
var errUncacheable = errors.New("respcache: request is not canonical JSON")

// errEmbedding is the cause of an embedding request, which has no key: an
// Entry keeps no vectors, so the cache passes it on.
var errEmbedding = errors.New("respcache: an embedding request is not cached")

// key returns the cache key of req in scope: the SHA-256, in hex, of its
// canonical encoding, which holds neither prompt text nor the scope. The
// encoding is the JSON of the fields that answer (canonical); each part
// that is JSON text of the caller's or the model's (tool parameters, the
// schema, tool-call arguments, Extra) is replaced by its RFC 8785
// fingerprint ([effect.Fingerprint]), so that parts equal as JSON values,
// whatever their key order, white space or number spelling, encode alike,
// and the prompt's text is hashed once, not canonicalized.
func key(scope string, req *portico.Request) (string, error) {
	if req.Embedding != nil {
		return "", errEmbedding
	}
	c := canonical{Scope: scope, Model: req.Model, Messages: req.Messages, Tools: req.Tools, Schema: req.Schema,
		MaxOutputTokens: req.MaxOutputTokens, Reasoning: req.Reasoning, Prefix: req.Prefix}
	if req.Contract != nil {
		c.ModelClasses = req.Contract.ModelClasses
	}
	extraErr := c.fingerprint(req.Extra)
	doc, err := json.Marshal(&c)
	if errors.Join(extraErr, err) != nil {
		return "", &portico.Error{Class: portico.Permanent, Reason: "request not canonical JSON", Err: errUncacheable}
	}
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:]), nil
}

// fingerprint replaces each JSON part of c, and of the request's extra
// (c's Extra), by its fingerprint, copying what it changes; the error is
// extra's, when it is not JSON.
func (c *canonical) fingerprint(extra map[string]any) error {
	if slices.ContainsFunc(c.Messages, func(m portico.Message) bool { return len(m.ToolCalls) > 0 }) {
		c.Messages = slices.Clone(c.Messages)
		for i := range c.Messages {
			c.Messages[i].ToolCalls = fingerprinted(c.Messages[i].ToolCalls, func(tc *portico.ToolCall) *json.RawMessage { return &tc.Arguments })
		}
	}
	c.Tools = fingerprinted(c.Tools, func(t *portico.Tool) *json.RawMessage { return &t.Parameters })
	if c.Schema != nil {
		s := *c.Schema
		s.JSON = fingerprint(s.JSON)
		c.Schema = &s
	}
	if len(extra) == 0 {
		return nil
	}
	doc, err := json.Marshal(extra)
	c.Extra = fingerprint(doc)
	return err
}

// fingerprinted returns a copy of xs, each element's JSON part (field's)
// replaced by its fingerprint; an empty xs as it is.
func fingerprinted[T any](xs []T, field func(*T) *json.RawMessage) []T {
	if len(xs) == 0 {
		return xs
	}
	xs = slices.Clone(xs)
	for i := range xs {
		f := field(&xs[i])
		*f = fingerprint(*f)
	}
	return xs
}

// fingerprint returns the JSON string of raw's [effect.Fingerprint], or,
// when raw is not JSON (a model may write such arguments), of raw itself
// after a "!" that no fingerprint has. Empty stays empty.
func fingerprint(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	s, err := effect.Fingerprint(raw)
	if err != nil {
		s = "!" + string(raw)
	}
	out, _ := json.Marshal(s)
	return out
}
