package ratelimit

import (
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// Headroom returns what is left of the limits req's key is held to, as a
// fraction in [0, 1] of the tightest of its buckets: the lower of the
// request bucket's and the token bucket's level over capacity, refilled to
// now and lowered by any provider's x-ratelimit headers the limiter
// adopted (see Config.Feedback). 1 means full, or a key the limiter has
// not seen (its buckets start full), or no bucket; 0 means empty, or in
// debt. A Limiter with a Shared store answers from its local share, which
// follows the store's decisions for this instance's calls. It reads
// without taking anything, creates no key, and is safe for
// concurrent use: a routing layer may ask it of every candidate route of
// every request ([rank.Candidate]'s Spent is 1 minus it).
//
// [rank.Candidate]: https://pkg.go.dev/github.com/portico-llm/portico/rank#Candidate
func (l *Limiter) Headroom(req *portico.Request) float64 {
	if req == nil {
		return 1
	}
	if l.shared != nil && l.shared.local != nil {
		return l.shared.local.Headroom(req)
	}
	e := l.lookup(l.keyOf(req))
	if e == nil {
		return 1
	}
	defer e.mu.Unlock()
	now := mono.Now()
	return max(min(1, e.req.fill(now), e.tok.fill(now)), 0)
}
