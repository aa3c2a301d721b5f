package fakeanthropic

import (
	"cmp"
	"encoding/json"
	"hash"
	"hash/fnv"
	"strings"
	"time"
)

// The prompt cache of a model with ModelConfig.PromptCache, as
// https://docs.claude.com/en/docs/build-with-claude/prompt-caching
// describes it: every block with cache_control {"type":"ephemeral"[,
// "ttl":"5m"|"1h"]} ends a prefix (tools, system, then messages, in that
// order) that is written to the cache for its TTL, 5 minutes by default,
// when it is at least the model's minimum length; a later request whose
// prefix up to one of its breakpoints is in the cache reads it, and the
// hit refreshes the entry's lifetime. Reads are cache_read_input_tokens,
// the new segments written cache_creation_input_tokens, split by TTL in
// cache_creation, and the rest input_tokens.

// cacheControl is a block's cache_control.
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

// breakpointAt is one breakpoint of a request: the prefix's hash, its
// length in tokens and the lifetime asked for.
type breakpointAt struct {
	hash   uint64
	tokens int
	ttl    time.Duration
}

// DefaultMinCacheTokens is the shortest prefix a zero
// ModelConfig.MinCacheTokens caches: 1,024 tokens, the API's minimum for
// Claude Sonnet and Opus models.
const DefaultMinCacheTokens = 1024

// breakpoints walks the prompt as the API orders it and returns its
// breakpoints, in order. Blocks are hashed by their content, not their
// cache_control, so that a breakpoint moved later still hits the prefix.
func (c *call) breakpoints() []breakpointAt {
	h := fnv.New64a()
	write := func(s ...string) {
		for _, x := range s {
			h.Write([]byte(x))
			h.Write([]byte{0})
		}
	}
	write(c.Model)
	for _, t := range c.req.Tools {
		write(t.Name, string(t.InputSchema))
	}
	var out []breakpointAt
	tokens := 0
	at := func(cc *cacheControl) {
		if cc == nil || cc.Type != "ephemeral" {
			return
		}
		ttl := 5 * time.Minute
		if cc.TTL == "1h" {
			ttl = time.Hour
		}
		out = append(out, breakpointAt{hash: h.Sum64(), tokens: tokens, ttl: ttl})
	}
	walk := func(raw json.RawMessage) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			write(s)
			tokens += len(strings.Fields(s))
			return
		}
		var blocks []block
		_ = json.Unmarshal(raw, &blocks) // checked by countInput's reading
		for i := range blocks {
			b := &blocks[i]
			hashBlock(h, b)
			tokens += b.tokens()
			at(b.CacheControl)
		}
	}
	walk(c.req.System)
	for _, m := range c.req.Messages {
		write(m.Role)
		tokens += 3
		walk(m.Content)
	}
	return out
}

// hashBlock writes b's content, without its cache_control, to h.
func hashBlock(h hash.Hash64, b *block) {
	for _, s := range [...]string{b.Type, b.Text, string(b.Content), b.Thinking, b.Signature, b.Data, string(b.Source), b.ID, b.Name, string(b.Input), b.ToolUseID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
}

// promptCache reads and, when commit is set, writes the model's cache for
// this request at the server's time now, and returns the tokens read and
// written (and of the writes, those for one hour). A request that is not
// answered (a fault, a refusal) reads without committing: it neither
// writes nor refreshes.
func (c *call) promptCache(now time.Duration, commit bool) (read, write, write1h int) {
	bps := c.breakpoints()
	least := cmp.Or(c.m.cfg.MinCacheTokens, DefaultMinCacheTokens)
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cache == nil && commit {
		m.cache = make(map[uint64]time.Duration)
	}
	hit := -1
	for i := len(bps) - 1; i >= 0; i-- {
		if until, ok := m.cache[bps[i].hash]; ok && until > now {
			hit = i
			read = bps[i].tokens
			if commit {
				m.cache[bps[i].hash] = max(until, now+bps[i].ttl) // a hit refreshes the entry
			}
			break
		}
	}
	done := read
	for _, bp := range bps[hit+1:] {
		if bp.tokens < least || bp.tokens <= done {
			continue
		}
		seg := bp.tokens - done
		write += seg
		if bp.ttl == time.Hour {
			write1h += seg
		}
		done = bp.tokens
		if commit {
			m.cache[bp.hash] = now + bp.ttl
		}
	}
	return read, write, write1h
}
