package rank

import (
	"math"
	"slices"
	"time"

	"github.com/portico-llm/portico"
)

// Candidate is a route that fits a request and is available, as a [Policy]
// sees it. The measured fields come from the layer's [Table]; the Route
// pointer is the layer's, read-only.
type Candidate struct {
	// Index is the route's position in the layer's configured routes.
	Index int
	// Route is the route itself.
	Route *portico.Route
	// EstimatedCost is the request's price on this route before the call
	// ([portico.Capabilities.EstimateCost]), in the Capabilities' price unit.
	EstimatedCost float64
	// Latency is the moving average of the route's successful calls' duration;
	// 0 before the first success, so an unmeasured route looks fast and is
	// explored.
	Latency time.Duration
	// TTFT is the moving average of the time to the first streamed chunk; 0
	// before the first streamed call that delivered one.
	TTFT time.Duration
	// ErrorRate is the moving average, in [0, 1], of the outcomes the rank
	// column of [portico.FaultOf] counts: 1 per failure by the route's
	// fault (FaultRoute), 0 per success. Any other outcome (the caller's,
	// the request's, a local refusal, an unanswered one) does not move it.
	ErrorRate float64
	// SinceFailure is how long ago the route last failed by its own fault;
	// negative when it has not.
	SinceFailure time.Duration
	// InFlight is the number of calls on the route that have not ended.
	InFlight int
	// Observed is the number of ended calls that moved the averages.
	Observed int
	// Weight is the route's static preference, > 0 (1 unless the layer has
	// weights); the built-in policies divide their score by it.
	Weight float64
	// Spent is how much of the route's rate limit is used, in [0, 1]: 1
	// minus the headroom of the tightest of its limiter's buckets for the
	// request (ratelimit's Limiter.Headroom, lowered by the provider's
	// x-ratelimit headers), set by the layer before [Table.Fill]; 0, the
	// zero value, when the layer reads none. [Split] weighs a candidate
	// by Weight·(1-Spent), so traffic moves off a route before it answers
	// 429.
	Spent float64
	// Draw is a uniform random number in (0, 1], drawn by [Table.Fill]
	// once per candidate of each request, for a policy that splits
	// traffic at random ([Split]) and stays a pure function of the
	// Candidate.
	Draw float64
}

// Policy scores a candidate: the lower the score, the earlier the candidate
// is tried. A NaN score ranks as +Inf. A Policy must be pure and fast, never
// block, and be safe for concurrent use.
type Policy func(c Candidate) float64

// Score returns p(c), with NaN taken as +Inf.
//
// It is never inlined: inlined, it copies c to pass it on, in 16-byte
// moves that a Candidate just written by [Table.Fill] stalls (store
// forwarding fails), which cost Router.Pick over three routes more than
// the three Weighted scores themselves.
//
//go:noinline
func (p Policy) Score(c Candidate) float64 {
	s := p(c)
	if s != s {
		return math.Inf(1)
	}
	return s
}

// Order sorts cands by p's score, lowest first, keeping their order among
// equal scores, and returns cands. It does not allocate.
func Order(cands []Candidate, p Policy) []Candidate {
	slices.SortStableFunc(cands, func(a, b Candidate) int {
		sa, sb := p.Score(a), p.Score(b)
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	return cands
}

// Split is the Policy of a weighted random split (a canary, a cost split
// between equivalent routes): it scores -ln(Draw)/Weight, an exponential
// variable of rate Weight, so the lowest score is candidate i's with
// probability Weight_i over the sum of the candidates' Weights (7:3 sends
// 70% and 30%), and the order of the rest is a weighted draw without
// replacement among them (Efraimidis and Spirakis, "Weighted random
// sampling with a reservoir", 2006): a fallback tries, and a hedge goes
// to, the next candidate in the same proportions. Each weight is scaled by
// the candidate's headroom, 1-Spent (a key at 10% of its limits gets 10%
// of its share; one at none goes last); it reads nothing else the layer
// measured.
func Split(c Candidate) float64 { return -math.Log(c.Draw) / (c.Weight * (1 - c.Spent)) }

// ByCost scores by estimated price, divided by weight: the cheapest route
// first.
func ByCost(c Candidate) float64 { return c.EstimatedCost / c.Weight }

// ByLatency scores by latency in seconds, divided by weight: the fastest
// route first, unmeasured routes (Latency 0) before all, so each is measured.
func ByLatency(c Candidate) float64 { return c.Latency.Seconds() / c.Weight }

// HealthMemory is how long [ByHealth] holds a failure against a route.
const HealthMemory = time.Minute

// ByHealth scores by how recent the route's last failure is, from 1 (just
// now) down to 0 (none within [HealthMemory]), plus a tenth per call in
// flight (toward idle routes on a tie), divided by weight. A route that
// failed is thus avoided for a minute, even while its breaker stays closed,
// and then gets its place back.
func ByHealth(c Candidate) float64 {
	recent := 0.0
	if c.SinceFailure >= 0 && c.SinceFailure < HealthMemory {
		recent = 1 - c.SinceFailure.Seconds()/HealthMemory.Seconds()
	}
	return (recent + 0.1*float64(c.InFlight)) / c.Weight
}

// Weighted is a [Policy] that adds its terms, each a coefficient times a
// Candidate field, and divides the sum by the candidate's weight. A zero
// coefficient drops its term; the zero Weighted scores every route 0, so the
// configured order wins.
type Weighted struct {
	Cost      float64 // per price unit of EstimatedCost
	Latency   float64 // per second of Latency
	TTFT      float64 // per second of TTFT
	ErrorRate float64 // per unit of ErrorRate (0..1)
	InFlight  float64 // per call in flight
}

// Score returns the weighted sum described on [Weighted]; w.Score is a Policy.
func (w Weighted) Score(c Candidate) float64 {
	s := w.Cost*c.EstimatedCost + w.Latency*c.Latency.Seconds() + w.TTFT*c.TTFT.Seconds() +
		w.ErrorRate*c.ErrorRate + w.InFlight*float64(c.InFlight)
	return s / c.Weight
}
