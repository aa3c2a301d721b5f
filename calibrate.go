package portico

import (
	"cmp"
	"math"
	"sync"
	"sync/atomic"

	"github.com/portico-llm/portico/internal/rules"
)

// InputObserver is implemented by an [Estimator] that learns from the
// input tokens a provider reported for a request it estimated. A layer
// that settles a call on its answer's usage (package ratelimit's Limiter)
// calls ObserveInputTokens with the request, the estimate its
// EstimateInputTokens returned for it (the one the layer reserved, so
// that the observer need not estimate again) and the answer's
// Usage.InputTokens when that is above zero. Each call is one sample: a
// call that passes two such layers with the same observer should have
// only one of them observe. It must be safe for concurrent use and fast:
// it runs on every answered call.
type InputObserver interface {
	ObserveInputTokens(req *Request, estimate, inputTokens int)
}

// EstimateOnly returns e as it estimates, but not an [InputObserver] even
// when e is one: the view to give a layer whose calls another layer
// already reports to e, so that one call gives e one sample.
func EstimateOnly(e Estimator) Estimator { return estimateOnly{e} }

// estimateOnly hides an Estimator's other methods.
type estimateOnly struct{ e Estimator }

func (v estimateOnly) EstimateInputTokens(req *Request) int { return v.e.EstimateInputTokens(req) }

// Calibration configures a [Calibrated] estimator. Its zero value is the
// defaults below; each field's zero means its default.
type Calibration struct {
	// Key maps a request to the key its ratio is learned under: nil means
	// Request.Model (a route's model name at a per-route limiter).
	Key func(*Request) string
	// Alpha is the weight of the newest sample in the moving averages, in
	// (0, 1]; zero means 0.1 (about the last 10 calls).
	Alpha float64
	// MinSamples is how many samples a key needs before its ratio is
	// applied; zero means 16. Until then the base estimate stands.
	MinSamples int
	// Min and Max clamp the ratio applied; zero means 0.5 and 4 (a byte
	// estimate is off by less than that for any text).
	Min, Max float64
	// Keys bounds the keys learned apart, for bounded memory; zero means
	// 1,024. Keys beyond it share one ratio.
	Keys int
}

// The defaults of [Calibration]'s zero fields.
const (
	DefaultCalibrationAlpha   = 0.1
	DefaultCalibrationSamples = 16
	DefaultCalibrationMin     = 0.5
	DefaultCalibrationMax     = 4
	DefaultCalibrationKeys    = 1024
)

// Calibrated is an Estimator that scales a base Estimator's estimate by
// what providers reported: per key (Calibration.Key), it keeps
// exponentially weighted moving averages of the input tokens reported
// and of the base's estimates for the same requests, and once a key has
// MinSamples samples it returns ceil(base × ratio), the ratio being the
// first average over the second clamped to [Min, Max] (a ratio of
// averages, so large requests weigh as much as their tokens). A sample's
// base estimate is not made again: it is the estimate observed over the
// key's ratio when observed (within one token of the base's when no
// sample moved the ratio in between). The same estimates and samples in
// the same order give the same ratio. Its memory is bounded by
// Calibration.Keys. It is an [InputObserver], safe for concurrent use:
// an estimate reads its key's ratio without a lock, a sample locks its
// key only; build it with [NewCalibrated].
type Calibrated struct {
	base              Estimator
	key               func(*Request) string
	alpha, lo, hi     float64
	minSamples, limit int

	keys     sync.Map     // string → *ratio
	n        atomic.Int64 // len(keys)
	mu       sync.Mutex   // makes the keys
	overflow ratio        // the keys beyond limit
}

// ratio is one key's learning: the averages under mu, the factor applied
// (float64 bits, 0 until MinSamples) readable without it.
type ratio struct {
	mu       sync.Mutex
	n        int
	act, est float64
	factor   atomic.Uint64
}

// applied is the factor r applies: 1 until it has enough samples.
func (r *ratio) applied() float64 {
	if f := math.Float64frombits(r.factor.Load()); f > 0 {
		return f
	}
	return 1
}

// fold adds a sample of act tokens reported against est estimated to r's
// averages, weighted by alpha (the first sample sets them). Called with
// r.mu held.
func (r *ratio) fold(act, est, alpha float64) {
	if r.n == 0 {
		r.act, r.est = act, est
	} else {
		r.act += alpha * (act - r.act)
		r.est += alpha * (est - r.est)
	}
	r.n++
}

// NewCalibrated returns base calibrated as c says, or an error starting
// with "portico: Calibration" naming the field that can only be a
// mistake: a nil base, Alpha outside [0, 1], a negative MinSamples or
// Keys, a negative or NaN Min or Max, or Min above Max (after defaults).
func NewCalibrated(base Estimator, c Calibration) (*Calibrated, error) {
	lo, hi := cmp.Or(c.Min, DefaultCalibrationMin), cmp.Or(c.Max, DefaultCalibrationMax)
	if err := rules.First(
		rules.If(base == nil, "portico: Calibration: nil base Estimator"),
		rules.If(!(c.Alpha >= 0 && c.Alpha <= 1), "portico: Calibration.Alpha outside [0, 1]"),
		rules.If(c.MinSamples < 0, "portico: Calibration.MinSamples is negative"),
		rules.If(c.Keys < 0, "portico: Calibration.Keys is negative"),
		rules.If(!(lo > 0) || !(hi >= lo) || math.IsInf(hi, 1), "portico: Calibration.Min and Max must be finite, > 0 and Min <= Max"),
	); err != nil {
		return nil, err
	}
	e := &Calibrated{base: base, key: c.Key, alpha: cmp.Or(c.Alpha, DefaultCalibrationAlpha), lo: lo, hi: hi,
		minSamples: cmp.Or(c.MinSamples, DefaultCalibrationSamples), limit: cmp.Or(c.Keys, DefaultCalibrationKeys)}
	if e.key == nil {
		e.key = func(r *Request) string { return r.Model }
	}
	return e, nil
}

// EstimateInputTokens returns the base's estimate of req, times its
// key's ratio once the key has enough samples (rounded up).
func (e *Calibrated) EstimateInputTokens(req *Request) int {
	n := e.base.EstimateInputTokens(req)
	if f := e.Ratio(req); f != 1 && n > 0 {
		return int(math.Ceil(float64(n) * f))
	}
	return n
}

// Ratio returns the factor req's key applies to the base's estimate: 1
// until the key has MinSamples samples.
func (e *Calibrated) Ratio(req *Request) float64 {
	if r := e.find(e.key(req)); r != nil {
		return r.applied()
	}
	return 1
}

// ObserveInputTokens records a sample for req's key: inputTokens reported
// against estimate, what EstimateInputTokens returned for req, over the
// key's ratio (the base's estimate, recovered). A sample without tokens
// on either side (an estimate or a report of 0 or less) is not recorded.
func (e *Calibrated) ObserveInputTokens(req *Request, estimate, inputTokens int) {
	if estimate <= 0 || inputTokens <= 0 {
		return
	}
	r := e.entry(e.key(req))
	r.mu.Lock()
	r.fold(float64(inputTokens), float64(estimate)/r.applied(), e.alpha) // under mu: the ratio the last sample left
	if r.n >= e.minSamples {
		r.factor.Store(math.Float64bits(min(max(r.act/r.est, e.lo), e.hi)))
	}
	r.mu.Unlock()
}

// find returns key's ratio, the overflow's when the keys are full, or
// nil: no lock taken.
func (e *Calibrated) find(key string) *ratio {
	if r, ok := e.keys.Load(key); ok {
		return r.(*ratio)
	}
	if e.n.Load() >= int64(e.limit) {
		return &e.overflow
	}
	return nil
}

// entry returns key's ratio, made if there is room, else the overflow's.
func (e *Calibrated) entry(key string) *ratio {
	if r := e.find(key); r != nil {
		return r
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.find(key); r != nil {
		return r
	}
	r := &ratio{}
	e.keys.Store(key, r)
	e.n.Add(1)
	return r
}
