package respcache

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/portico-llm/portico"
)

// DefaultTTL is how long an answer is served when Config.TTL is zero.
const DefaultTTL = time.Hour

// Config configures a [Cache]. The zero Config caches per tenant, in
// memory, for an hour.
type Config struct {
	// Scope maps a request to the scope its answer is shared in: a request
	// gets a cached answer only from a request of the same scope. Nil
	// means [ByClient] (Identity.ClientKey): no tenant is served another
	// tenant's answer. A function returning a constant shares answers
	// between every tenant.
	Scope func(*portico.Request) string
	// TTL is how long an answer is served after it was cached. Zero means
	// [DefaultTTL] (1 hour); negative is an error.
	TTL time.Duration
	// Store keeps the answers: nil means a [NewMemory] of the defaults,
	// package redisstore's RespCache shares them between instances. The
	// cache fails open: a store's error is a miss, and a fill it refuses
	// is dropped.
	Store Store
}

// ByClient scopes answers by Identity.ClientKey.
func ByClient(r *portico.Request) string { return r.Identity.ClientKey }

// Entry is a cached answer: the fields of a Response that say what the
// model answered. Usage, Cost and the routing fields are not kept: a hit
// costs nothing and no route answered it.
type Entry struct {
	ID           string               `json:"id,omitempty"`
	Text         string               `json:"text,omitempty"`
	ToolCalls    []portico.ToolCall   `json:"tool_calls,omitempty"`
	Thoughts     []portico.Thought    `json:"thoughts,omitempty"`
	FinishReason portico.FinishReason `json:"finish_reason,omitempty"`
	Model        string               `json:"model,omitempty"`
}

// Size returns the bytes of e's text, tool calls and thoughts: what a
// [Memory] bounds.
func (e *Entry) Size() int {
	n := len(e.ID) + len(e.Text) + len(e.Model) + len(e.FinishReason)
	for _, c := range e.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	for _, t := range e.Thoughts {
		n += len(t.Dialect) + len(t.Kind) + len(t.ID) + len(t.Text) + len(t.Signature)
	}
	return n
}

// Store keeps cached answers by key (a hex SHA-256 that holds no prompt
// text). Implementations must be safe for concurrent use and must not
// modify an Entry once Set.
type Store interface {
	// Get returns the entry of key, or nil without error when there is
	// none (or it expired).
	Get(ctx context.Context, key string) (*Entry, error)
	// Set keeps e under key for ttl.
	Set(ctx context.Context, key string, e *Entry, ttl time.Duration) error
}

// Stats counts a Cache's lookups since it was built.
type Stats struct {
	Hits, Misses int64
}

// Cache is the response-cache layer: [Cache.Wrap] answers a request from
// the cache when an answer to the same canonical request, in the same
// scope, was cached within the TTL, and otherwise calls the Model below
// and caches its answer. Build it with [New]; it is safe for concurrent
// use.
type Cache struct {
	scope        func(*portico.Request) string
	ttl          time.Duration
	store        Store
	hits, misses atomic.Int64
}

// New returns the Cache cfg describes, or an error starting with
// "respcache:" for a negative TTL.
func New(cfg Config) (*Cache, error) {
	if cfg.TTL < 0 {
		return nil, errors.New("respcache: negative Config.TTL")
	}
	c := &Cache{scope: cfg.Scope, ttl: cmp.Or(cfg.TTL, DefaultTTL), store: cfg.Store}
	if c.scope == nil {
		c.scope = ByClient
	}
	if c.store == nil {
		c.store = NewMemory(0, 0)
	}
	return c, nil
}

// Stats returns the lookups counted so far.
func (c *Cache) Stats() Stats { return Stats{Hits: c.hits.Load(), Misses: c.misses.Load()} }

// Key returns req's cache key: the hex SHA-256 of its canonical JSON
// (RFC 8785, as package effect's keys) with its scope, or a Permanent
// *portico.Error when a part of req is not JSON (such a request is passed
// through uncached).
func (c *Cache) Key(req *portico.Request) (string, error) { return key(c.scope(req), req) }

// Wrap is the Middleware. A hit returns the cached answer (Usage, Cost,
// Route and Hops zero: nothing was called; Model names the model that
// answered first) and, for a streamed request, delivers its text
// to OnChunk in chunks of at most 64 bytes cut at UTF-8 boundaries,
// returning OnChunk's error unchanged if it fails; reasoning is not
// streamed from the cache. A miss calls next and caches its answer when
// next returned no error and the answer ended naturally (FinishStop or
// FinishToolCalls): every layer below has accepted it (in package stack,
// each route's validate), and no error, truncated or filtered answer is
// ever cached. An embedding request ([portico.Embedding]) is passed on,
// neither looked up nor cached. Each lookup is an [portico.EventCache]
// ("hit" or "miss").
func (c *Cache) Wrap(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if err := portico.Gone(ctx); err != nil {
			return nil, err
		}
		k, err := c.Key(req)
		if err != nil {
			return next.Generate(ctx, req)
		}
		if e := c.lookup(ctx, k); e != nil {
			return serve(ctx, req, e)
		}
		resp, err := next.Generate(ctx, req)
		if e := cacheable(resp, err); e != nil {
			_ = c.store.Set(context.WithoutCancel(ctx), k, e, c.ttl)
		}
		return resp, err
	})
}

// natural are the FinishReasons of the answers a Cache keeps.
var natural = []portico.FinishReason{portico.FinishStop, portico.FinishToolCalls}

// cacheable returns the entry of next's answer to cache, nil unless it
// answered and the answer ended naturally.
func cacheable(resp *portico.Response, err error) *Entry {
	if err != nil || resp == nil || !slices.Contains(natural, resp.FinishReason) {
		return nil
	}
	return &Entry{ID: resp.ID, Text: resp.Text, ToolCalls: slices.Clone(resp.ToolCalls), Thoughts: slices.Clone(resp.Thoughts),
		FinishReason: resp.FinishReason, Model: resp.Model}
}

// lookup returns the entry under k, nil for a miss, counting the lookup
// in Stats and observing it.
func (c *Cache) lookup(ctx context.Context, k string) *Entry {
	e, _ := c.store.Get(ctx, k)
	n, reason := &c.misses, "miss"
	if e != nil {
		n, reason = &c.hits, "hit"
	}
	n.Add(1)
	portico.Observe(ctx, portico.Event{Kind: portico.EventCache, Reason: reason})
	return e
}

// chunkBytes is the most bytes of a chunk a hit streams.
const chunkBytes = 64

// serve answers req with e, streaming its text when req streams.
func serve(ctx context.Context, req *portico.Request, e *Entry) (*portico.Response, error) {
	for text := e.Text; req.OnChunk != nil && text != ""; {
		n := chunkLen(text)
		if err := portico.Gone(ctx); err != nil {
			return nil, err
		}
		if err := req.OnChunk(portico.Chunk{Text: text[:n]}); err != nil {
			return nil, err
		}
		text = text[n:]
	}
	return &portico.Response{ID: e.ID, Text: e.Text, ToolCalls: slices.Clone(e.ToolCalls), Thoughts: slices.Clone(e.Thoughts),
		FinishReason: e.FinishReason, Model: e.Model}, nil
}

// chunkLen is the length of the next chunk a hit streams of text:
// chunkBytes at most, cut before the start of a rune, or chunkBytes when
// none starts there (text that is not UTF-8).
func chunkLen(text string) int {
	n := min(len(text), chunkBytes)
	for n < len(text) && n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return cmp.Or(n, min(len(text), chunkBytes))
}
