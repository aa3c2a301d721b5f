package fallback

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// Candidate is a route that passed the filter, as a [Ranker] sees it.
type Candidate struct {
	// Index is the route's position in Config.Routes.
	Index int
	// Route is the route; read-only.
	Route *portico.Route
	// EstimatedCost is the route's price for the request before the call
	// ([portico.Capabilities.EstimateCost]): the input tokens (the larger of the
	// estimate and Contract.MaxInputTokens) at InputPrice plus MaxOutputTokens
	// at OutputPrice, in the Capabilities' price unit.
	EstimatedCost float64
	// Latency is the smoothed duration of the route's successful calls made by
	// this group, as TCP smooths round-trip times (RFC 6298's SRTT: each new
	// sample weighs 1/8); 0 before the route's first success.
	Latency time.Duration
	// SinceFailure is how long ago the route last failed through this group
	// with a route fault (Transient, RateLimited, Ambiguous, InvalidResponse,
	// see [portico.Class.RouteFault]) or by running out of its share of the
	// time; negative when it has not failed. A call that the caller's own
	// Request.OnChunk ended with an error is not held against the route.
	SinceFailure time.Duration
}

// Ranking is what a [Ranker] ranks: the request and its candidates, in the
// order of Config.Routes.
type Ranking struct {
	// Request is the caller's request; read-only.
	Request *portico.Request
	// InputTokens is the estimated input of Request, in tokens.
	InputTokens int
	// Candidates are the routes that fit the request and are available now.
	Candidates []Candidate
}

// Ranker orders the candidates of one request: it returns them in the order in
// which to try them, and may sort r.Candidates in place and return it.
// Candidates it leaves out are not tried; unknown indexes are ignored. A Ranker
// must not block and must be safe for concurrent use: it runs on every request
// (as grpc-go's balancer.Picker). Seed 003 ranks by health, latency and cost:
// routes whose breaker is open are already filtered out, and [ByHealth],
// [ByLatency] and [ByCost] rank what remains; a Ranker of one's own can
// combine their fields.
type Ranker func(r Ranking) []Candidate

// ByCost is a [Ranker] that tries the cheapest candidate first (by
// Candidate.EstimatedCost), keeping Config.Routes order among equals. It does
// not allocate.
func ByCost(r Ranking) []Candidate {
	slices.SortStableFunc(r.Candidates, func(a, b Candidate) int {
		switch {
		case a.EstimatedCost < b.EstimatedCost:
			return -1
		case a.EstimatedCost > b.EstimatedCost:
			return 1
		}
		return 0
	})
	return r.Candidates
}

// ByLatency is a [Ranker] that tries the fastest candidate first, by
// Candidate.Latency; candidates not yet measured come after the measured ones,
// and Config.Routes order is kept among equals. A route is measured only when
// the group calls it, so one ranked behind faster routes keeps its last
// measurement until they fail. It does not allocate.
func ByLatency(r Ranking) []Candidate {
	slices.SortStableFunc(r.Candidates, func(a, b Candidate) int {
		switch {
		case a.Latency == b.Latency:
			return 0
		case a.Latency == 0:
			return 1
		case b.Latency == 0:
			return -1
		case a.Latency < b.Latency:
			return -1
		}
		return 1
	})
	return r.Candidates
}

// HealthMemory is how long [ByHealth] holds a failure against a route.
const HealthMemory = time.Minute

// ByHealth is a [Ranker] that tries first the candidates that have not failed
// in the last [HealthMemory] (by Candidate.SinceFailure), in Config.Routes
// order, then those that have, the most recent failure last. A route that
// failed is thus avoided for a minute, even while its breaker stays closed,
// and then gets its place back. It does not allocate.
func ByHealth(r Ranking) []Candidate {
	slices.SortStableFunc(r.Candidates, func(a, b Candidate) int {
		ka, kb := failureKey(a.SinceFailure), failureKey(b.SinceFailure)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return r.Candidates
}

// failureKey is 0 for a route without a failure in HealthMemory, and larger
// the more recent its last failure.
func failureKey(since time.Duration) time.Duration {
	if since < 0 || since >= HealthMemory {
		return 0
	}
	return HealthMemory - since
}

// routeStats is what a group with a Ranker learns about one route from the
// calls it makes: 16 bytes per route, updated without locks.
type routeStats struct {
	latency  atomic.Int64 // smoothed latency of successes in ns; 0: none yet
	failedAt atomic.Int64 // Group clock (ns) of the last failure, plus 1; 0: never
}

// success records a successful call that took d.
func (s *routeStats) success(d time.Duration) {
	x := max(int64(d), 1)
	for {
		old := s.latency.Load()
		v := x
		if old != 0 {
			v = max(old+(x-old)/8, 1) // RFC 6298: SRTT = 7/8 SRTT + 1/8 R
		}
		if s.latency.CompareAndSwap(old, v) {
			return
		}
	}
}

// failure records a failure at now on the Group's clock.
func (s *routeStats) failure(now int64) { s.failedAt.Store(now + 1) }

// fill sets c's measured fields at now on the Group's clock.
func (s *routeStats) fill(c *Candidate, now int64) {
	c.Latency = time.Duration(s.latency.Load())
	c.SinceFailure = -1
	if at := s.failedAt.Load(); at != 0 {
		c.SinceFailure = time.Duration(max(now-(at-1), 0))
	}
}
