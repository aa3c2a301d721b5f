package portico

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// CountFunc asks a provider for the input tokens of req: a count-tokens
// endpoint, such as the anthropic and gemini adapters' Model.CountTokens.
// It must return when ctx is done.
type CountFunc func(ctx context.Context, req *Request) (int, error)

// Counting configures a [Counted] estimator; its zero value is the
// defaults below.
type Counting struct {
	// Timeout bounds one count, so an estimate never waits longer: past
	// it the estimate is Fallback's. Zero means 500ms; negative is an
	// error.
	Timeout time.Duration
	// Backoff is how long counting stops after a count failed or timed
	// out, Fallback estimating meanwhile: an endpoint that is down costs
	// at most one Timeout per Backoff. Zero means 10s; negative is an
	// error.
	Backoff time.Duration
	// Cache is the most counts kept, by the request's fingerprint (the
	// oldest goes first); zero means 1,024; negative is an error.
	Cache int
	// Fallback estimates when there is no count; nil means
	// [DefaultEstimator].
	Fallback Estimator
}

// The defaults of [Counting]'s zero fields.
const (
	DefaultCountTimeout = 500 * time.Millisecond
	DefaultCountBackoff = 10 * time.Second
	DefaultCountCache   = 1024
)

// Counted is an Estimator that asks a provider's count-tokens endpoint
// (a [CountFunc]) and keeps the answers by the request's fingerprint (a
// SHA-256 of its model, messages, tools, schema and reasoning, never the
// text itself): a request counted before is answered from the cache, any
// other is counted within Counting.Timeout, and on an error, a timeout or
// during the Backoff after one, Counting.Fallback estimates. Its memory is
// bounded by Counting.Cache. Build it with [NewCounted]; it is safe for
// concurrent use.
type Counted struct {
	count    CountFunc
	timeout  time.Duration
	backoff  time.Duration
	size     int
	fallback Estimator

	mu    sync.Mutex
	cache map[[sha256.Size]byte]int
	order [][sha256.Size]byte // the keys, oldest first
	pause time.Time           // no count before it
}

// NewCounted returns an Estimator counting with count as c says, or an
// error starting with "portico: Counting" for a nil count or a negative
// Timeout, Backoff or Cache.
func NewCounted(count CountFunc, c Counting) (*Counted, error) {
	switch {
	case count == nil:
		return nil, errors.New("portico: Counting: nil CountFunc")
	case c.Timeout < 0:
		return nil, errors.New("portico: Counting.Timeout is negative")
	case c.Backoff < 0:
		return nil, errors.New("portico: Counting.Backoff is negative")
	case c.Cache < 0:
		return nil, errors.New("portico: Counting.Cache is negative")
	}
	return &Counted{count: count, timeout: cmp.Or(c.Timeout, DefaultCountTimeout), backoff: cmp.Or(c.Backoff, DefaultCountBackoff),
		size: cmp.Or(c.Cache, DefaultCountCache), fallback: cmp.Or[Estimator](c.Fallback, DefaultEstimator),
		cache: map[[sha256.Size]byte]int{}}, nil
}

// countKey is what a count depends on.
type countKey struct {
	Model     string     `json:"model"`
	Messages  []Message  `json:"messages"`
	Tools     []Tool     `json:"tools,omitempty"`
	Schema    *Schema    `json:"schema,omitempty"`
	Reasoning *Reasoning `json:"reasoning,omitempty"`
}

// EstimateInputTokens returns req's count: cached, asked for, or, without
// one, Counting.Fallback's estimate. It blocks at most Counting.Timeout.
func (e *Counted) EstimateInputTokens(req *Request) int {
	doc, err := json.Marshal(&countKey{Model: req.Model, Messages: req.Messages, Tools: req.Tools, Schema: req.Schema, Reasoning: req.Reasoning})
	if err != nil {
		return e.fallback.EstimateInputTokens(req) // not JSON: no key
	}
	key := sha256.Sum256(doc)
	e.mu.Lock()
	n, ok := e.cache[key]
	paused := time.Now().Before(e.pause)
	e.mu.Unlock()
	switch {
	case ok:
		return n
	case paused:
		return e.fallback.EstimateInputTokens(req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	n, err = e.count(ctx, req)
	cancel()
	if err != nil || n < 0 {
		e.mu.Lock()
		e.pause = time.Now().Add(e.backoff)
		e.mu.Unlock()
		return e.fallback.EstimateInputTokens(req)
	}
	e.remember(key, n)
	return n
}

// remember caches the count n under key, forgetting the oldest count when
// the cache is full.
func (e *Counted) remember(key [sha256.Size]byte, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.cache[key]; !ok {
		if len(e.order) >= e.size {
			delete(e.cache, e.order[0])
			e.order = e.order[1:]
		}
		e.order = append(e.order, key)
	}
	e.cache[key] = n
}
