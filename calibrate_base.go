package portico

// Scaled is implemented by an [Estimator] whose estimate is another's
// scaled by what it learned ([Calibrated]). The rule it serves: a learned
// scale shifts admission timing, never turns a request into a permanent
// refusal. A layer that would refuse a call for good on its estimate (a
// token bucket's capacity, package ratelimit) asks BaseInputTokens on
// that path only; when the unscaled need fits, it admits the call at the
// most it can reserve and settles on the usage reported, as for any
// estimate. BaseInputTokens must be safe for concurrent use.
type Scaled interface {
	Estimator
	// BaseInputTokens returns req's input tokens before any learned
	// scale: the innermost base's estimate.
	BaseInputTokens(req *Request) int
}

// BaseInputTokens returns the base Estimator's estimate of req, unscaled
// (the innermost base's, when the base is [Scaled] too), so that a
// learned ratio alone never makes a call too large for a limit (see
// [Scaled]).
func (e *Calibrated) BaseInputTokens(req *Request) int { return baseInputTokens(e.base, req) }

// BaseInputTokens returns the viewed Estimator's unscaled estimate of
// req: [EstimateOnly]'s view keeps the rule of [Scaled].
func (v estimateOnly) BaseInputTokens(req *Request) int { return baseInputTokens(v.e, req) }

// baseInputTokens returns e's estimate of req before any learned scale.
func baseInputTokens(e Estimator, req *Request) int {
	if s, ok := e.(Scaled); ok {
		return s.BaseInputTokens(req)
	}
	return e.EstimateInputTokens(req)
}
