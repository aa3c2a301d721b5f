package route

import (
	"cmp"
	"context"
	"math"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/rules"
)

// ThresholdConfig configures a [Threshold] router. The zero value is not usable:
// Strong and Weak need Models.
type ThresholdConfig struct {
	// Strong is the expensive, capable route; Weak the cheap one. Both need a
	// non-nil Model.
	Strong, Weak portico.Route
	// Scorer predicts the probability that Strong's answer wins; nil means
	// [HeuristicScore].
	Scorer Scorer
	// Threshold: a request goes to Strong when its score is strictly above it,
	// to Weak otherwise. Zero means 0.5; set it from [Calibrate]. To send
	// everything strong, use a negative threshold; everything weak, 1 or more.
	Threshold float64
	// Estimator predicts input tokens for the shared [portico.Capabilities.Fits]
	// filter; nil means portico.DefaultEstimator.
	Estimator portico.Estimator
}

// Threshold is RouteLLM's router over two routes: it scores each request before
// calling anything and sends it to the strong route when the predicted
// probability that the strong answer wins exceeds the threshold, to the weak one
// otherwise. Sweeping the threshold traces the cost–quality curve (RouteLLM:
// Ong et al., "RouteLLM: Learning to Route LLMs with Preference Data", 2024).
//
// The chosen route must fit the request ([portico.Capabilities.Fits], the same
// filter fallback uses) and be available (breaker not open); when it does not,
// the other route is used if it does, and a [portico.Hop] records why. Threshold
// is safe for concurrent use; [Threshold.Generate] is a [portico.Model].
type Threshold struct {
	routes    [2]portico.Route // 0 weak, 1 strong
	scorer    Scorer
	threshold float64
	est       portico.Estimator
}

// NewThreshold returns a Threshold router for cfg, or an error starting "route:"
// when a route has a nil Model or invalid Capabilities
// ([portico.Capabilities.Validate]), or the threshold is NaN.
func NewThreshold(cfg ThresholdConfig) (*Threshold, error) {
	if err := cmp.Or(
		rules.First(rules.If(portico.IsNil(cfg.Strong.Model) || portico.IsNil(cfg.Weak.Model), "route: NewThreshold needs Strong and Weak routes with Models")),
		checkCapabilities("NewThreshold", cfg.Weak, cfg.Strong),
		rules.First(rules.If(math.IsNaN(cfg.Threshold), "route: NewThreshold threshold is NaN")),
	); err != nil {
		return nil, err
	}
	t := &Threshold{routes: [2]portico.Route{cfg.Weak, cfg.Strong}, scorer: cfg.Scorer,
		threshold: cmp.Or(cfg.Threshold, 0.5), est: cmp.Or(cfg.Estimator, portico.DefaultEstimator)}
	if t.scorer == nil {
		t.scorer = HeuristicScore
	}
	return t, nil
}

// ThresholdPick is a [Threshold] router's decision for one request.
type ThresholdPick struct {
	// Score is the scorer's output for the request.
	Score float64
	// Strong is true when the score is above the threshold.
	Strong bool
}

// Decide scores req and says which route the threshold prefers, before the
// Fits and availability checks. It never blocks and does not allocate beyond
// what the scorer does.
func (t *Threshold) Decide(req *portico.Request) ThresholdPick {
	s := t.scorer(req)
	return ThresholdPick{Score: s, Strong: s > t.threshold}
}

// Generate routes req as described on [Threshold] and calls the chosen route.
// The answer is stamped with [portico.Route.Stamp]: Route names the route,
// Cost is an inner layer's Cost or else the route's price of the usage, and
// Hops starts with the preferred route when it was skipped. Errors: the
// chosen route's error, unchanged; one matching [portico.ErrNilResponse]
// (InvalidResponse) when it returned neither answer nor error; when neither route fits and is available, an
// [*portico.Error] wrapping [ErrNoRoute] (Class Rejected or Incompatible, see
// ErrNoRoute); a Permanent one when req is nil or wrong on any route (Fits'
// Permanent error, at once).
func (t *Threshold) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := refuse(ctx, req); err != nil {
		return nil, err
	}
	d := t.Decide(req)
	first := 0
	if d.Strong {
		first = 1
	}
	n := t.est.EstimateInputTokens(req)
	var sk skips
	for k := range 2 {
		r := &t.routes[first^k]
		h, ok, stop := check(r, req, n)
		if stop != nil {
			return nil, stop // wrong on any route
		}
		if ok {
			return callRoute(ctx, r, req, sk.hops)
		}
		sk.skip(ctx, r, h)
	}
	return nil, noRoute(sk.hops, sk.wait)
}

// callRoute calls r with req and stamps its answer, after the routes
// skipped in hops.
func callRoute(ctx context.Context, r *portico.Route, req *portico.Request, hops []portico.Hop) (*portico.Response, error) {
	resp, err := generate(ctx, r, req)
	if err != nil {
		return nil, err
	}
	return r.Stamp(resp, hops, 0), nil
}
