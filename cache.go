package portico

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/portico-llm/portico/internal/enum"
)

// CacheTTL marks a prompt-cache breakpoint on a [Message] or a [Part]: the
// provider is asked to cache the prompt up to and including it, for about
// that long, so that a later request that starts with the same prefix
// reads it from the cache (billed at [Capabilities].CachedInputPrice)
// instead of as input. The zero value, NoCache, marks nothing.
//
// Each adapter maps breakpoints to its provider's form: Anthropic's
// cache_control {"type":"ephemeral","ttl"} on the block (at most 4 per
// request, one-hour ones before five-minute ones; writes cost more than
// input, [Capabilities].CacheWritePrice); OpenAI's prompt_cache_key,
// derived from Identity.SessionID ([Identity.CacheKey]) when the request
// has a breakpoint, since OpenAI caches every long prompt by itself and the
// key only routes a session's calls to the same cache; nothing on Gemini,
// which caches implicitly. A provider caches only prompts above its minimum
// length (1,024 tokens on most models), and a breakpoint is advice: an
// answer never depends on it.
type CacheTTL uint8

// The cache lifetimes.
const (
	NoCache CacheTTL = iota // no breakpoint
	Cache5m                 // the provider's short lifetime: Anthropic's 5 minutes, refreshed by each hit
	Cache1h                 // one hour (Anthropic's ttl "1h")
)

// String returns "none", "5m" or "1h".
func (t CacheTTL) String() string { return enum.Name(cacheTTLNames[:], t, "CacheTTL") }

var cacheTTLNames = [...]string{NoCache: "none", Cache5m: "5m", Cache1h: "1h"}

// CacheBreakpoints returns the number of cache breakpoints in r's messages
// (on messages and on their parts). It does not allocate.
func (r *Request) CacheBreakpoints() int {
	n := 0
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Cache != NoCache {
			n++
		}
		for j := range m.Content {
			if m.Content[j].Cache != NoCache {
				n++
			}
		}
	}
	return n
}

// CacheKey returns the prompt-cache key of the session: "s-" and the first
// 32 hex digits of the SHA-256 of SessionID, the same for every call of
// the session and telling nothing of its id; "" when SessionID is empty.
// Adapters whose provider takes a cache key (OpenAI's prompt_cache_key)
// send it for requests that mark a cache breakpoint.
func (id Identity) CacheKey() string {
	if id.SessionID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id.SessionID))
	return "s-" + hex.EncodeToString(sum[:16])
}
