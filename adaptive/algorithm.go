package adaptive

import (
	"cmp"
	"github.com/portico-llm/portico/internal/rules"
	"math"
	"time"
)

// Algorithm is how a [Limit] moves its limit after each window of samples:
// [AIMD], [Vegas] or [Gradient2], each a struct whose zero value has the
// defaults of Netflix's concurrency-limits. The set is closed: the method is
// unexported.
type Algorithm interface {
	// update returns the new estimate of the limit after window w, given the
	// estimate now (limit), and may update the algorithm's state st. Pure but
	// for st.
	update(st *state, limit float64, w window) float64
	validate() error
}

// window is what a Limit aggregated over one window of samples.
type window struct {
	n        int           // samples
	rtt      time.Duration // the mean latency of those that were not drops; 0 if none
	inflight int           // the most calls in flight at a sample's admission
	dropped  bool          // a sample was a drop
}

// state is an algorithm's memory between windows, guarded by Limit.mu.
type state struct {
	// Gradient2: the long-term exponential average of the windows' latency.
	long      float64
	longCount int
	// Vegas: the no-load latency (the least seen since the last probe), the
	// windows since the last probe, and the jitter of the next probe.
	noLoad      time.Duration
	probeCount  int
	probeJitter float64
}

// AIMD is the loss-based algorithm of Netflix's AIMDLimit: after a window
// with a drop, or whose mean latency exceeds Timeout, the limit is
// multiplied by Backoff; after any other window in which the calls in flight
// reached half the limit, it grows by one. It needs no latency baseline, so
// it reacts only to what the destination refuses (429s, 5xx, timeouts).
type AIMD struct {
	// Backoff is the multiplicative decrease, in [0.5, 1). Zero means 0.9.
	Backoff float64
	// Timeout is the mean latency above which a window counts as a drop.
	// Zero means none: only failures are drops. Negative is an error.
	Timeout time.Duration
}

// setOutside reports whether v, a setting whose zero means its default,
// is set outside [lo, hi] (NaN included): the range rule of every
// algorithm's float settings.
func setOutside(v, lo, hi float64) bool { return v != 0 && !(v >= lo && v <= hi) }

func (a AIMD) validate() error {
	return rules.First(
		rules.If(setOutside(a.Backoff, 0.5, math.Nextafter(1, 0)), "adaptive: AIMD.Backoff must be in [0.5, 1)"),
		rules.If(a.Timeout < 0, "adaptive: negative AIMD.Timeout"),
	)
}

func (a AIMD) update(_ *state, limit float64, w window) float64 {
	backoff := cmp.Or(a.Backoff, 0.9)
	switch {
	case w.dropped || (a.Timeout > 0 && w.rtt > a.Timeout):
		return math.Floor(limit * backoff)
	case float64(w.inflight)*2 >= limit:
		return limit + 1
	}
	return limit
}

// Vegas is Netflix's VegasLimit, after TCP Vegas (Brakmo and Peterson,
// "TCP Vegas: End to End Congestion Avoidance on a Global Internet", IEEE
// JSAC 1995): it estimates the queue at the destination as
// limit * (1 - noLoad/rtt), noLoad the least latency seen, and grows the
// limit while that queue is short, shrinks it when it is long or a call is
// dropped. With t = max(1, floor(log10(limit))): a queue of at most t adds
// 6t, one below 3t adds t, one above 6t removes t, and a drop removes t. It
// probes for a new noLoad every ProbeMultiplier*limit windows (jittered by
// half), so a baseline that rose for good is relearnt.
type Vegas struct {
	// ProbeMultiplier sets how often noLoad is probed. Zero means 30;
	// negative is an error.
	ProbeMultiplier int
}

func (v Vegas) validate() error {
	return rules.First(rules.If(v.ProbeMultiplier < 0, "adaptive: negative Vegas.ProbeMultiplier"))
}

// log10Root is Netflix's Log10RootIntFunction: max(1, floor(log10(x))).
func log10Root(x float64) float64 { return max(1, math.Floor(math.Log10(max(x, 1)))) }

func (v Vegas) update(st *state, limit float64, w window) float64 {
	if w.rtt > 0 && st.newNoLoad(w.rtt, limit, cmp.Or(v.ProbeMultiplier, 30)) {
		return limit
	}
	t := log10Root(limit)
	if w.dropped { // every sample a drop has no latency, but is a drop
		return limit - t
	}
	if w.rtt <= 0 || float64(w.inflight)*2 < limit {
		return limit // no latency, or the caller does not use the limit: do not grow it
	}
	return limit + vegasStep(math.Ceil(limit*(1-float64(st.noLoad)/float64(w.rtt))), t)
}

// vegasStep is Vegas's move of the limit for a queue estimated at the
// destination, t being log10Root(limit): a queue of at most t adds 6t,
// one below 3t adds t, one above 6t removes t; otherwise the limit holds.
func vegasStep(queue, t float64) float64 {
	switch {
	case queue <= t:
		return 6 * t
	case queue < 3*t:
		return t
	case queue > 6*t:
		return -t
	}
	return 0
}

// newNoLoad is Vegas's baseline: it takes rtt, of a window at limit, as the
// no-load latency on a probe (every probe*limit windows, jittered) or when
// rtt is lower, and reports whether it did; the limit then stays.
func (st *state) newNoLoad(rtt time.Duration, limit float64, probe int) bool {
	st.probeCount++
	if st.probeJitter*float64(probe)*limit <= float64(st.probeCount) {
		st.probeJitter = 0.5 + 0.5*jitter(st)
		st.probeCount = 0
		st.noLoad = rtt
		return true
	}
	if st.noLoad == 0 || rtt < st.noLoad {
		st.noLoad = rtt
		return true
	}
	return false
}

// jitter returns the next number in [0, 1) of a small xorshift sequence kept
// in st, so that a Limit's probes are reproducible.
func jitter(st *state) float64 {
	x := uint64(st.probeJitter*(1<<53)) ^ 0x9e3779b97f4a7c15
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return float64(x>>11) / (1 << 53)
}

// Gradient2 is Netflix's Gradient2Limit: it compares each window's mean
// latency (short) with a long-term exponential average of them (long, over
// LongWindow windows) and sets
//
//	gradient = max(0.5, min(1, Tolerance * long / short))
//	limit    = (1-Smoothing)*limit + Smoothing*(gradient*limit + QueueSize)
//
// so the limit grows by about Smoothing*QueueSize per window while latency
// holds, and falls by up to half (smoothed) when it climbs past Tolerance
// times the baseline. It uses averages rather than minimums, which suits
// calls of very different sizes (an LLM's answers), and when the baseline
// is more than twice the current latency (after a long overload) decays it
// by 5% per window to return to steady state. It does not grow the limit
// while fewer than half of it are in flight.
type Gradient2 struct {
	// Tolerance is how much the latency may grow over its baseline before
	// the limit falls: 1.5 lets it grow by half. Zero means 1.5; below 1 is
	// an error.
	Tolerance float64
	// Smoothing is the weight of each new estimate, in (0, 1]. Zero means 0.2.
	Smoothing float64
	// QueueSize is how much the limit may exceed what the latency supports,
	// in calls. Zero means 4; negative is an error.
	QueueSize int
	// LongWindow is the number of windows the baseline averages over. Zero
	// means 600; negative is an error.
	LongWindow int
}

func (g Gradient2) validate() error {
	return rules.First(
		rules.If(setOutside(g.Tolerance, 1, math.MaxFloat64), "adaptive: Gradient2.Tolerance must be a finite number of at least 1"),
		rules.If(setOutside(g.Smoothing, math.SmallestNonzeroFloat64, 1), "adaptive: Gradient2.Smoothing must be in (0, 1]"),
		rules.If(g.QueueSize < 0, "adaptive: negative Gradient2.QueueSize"),
		rules.If(g.LongWindow < 0, "adaptive: negative Gradient2.LongWindow"),
	)
}

func (g Gradient2) update(st *state, limit float64, w window) float64 {
	if w.rtt <= 0 {
		return limit
	}
	tol, smooth, queue, long := cmp.Or(g.Tolerance, 1.5), cmp.Or(g.Smoothing, 0.2), float64(cmp.Or(g.QueueSize, 4)), cmp.Or(g.LongWindow, 600)
	short := float64(w.rtt)
	st.baseline(short, long)
	if float64(w.inflight) < limit/2 {
		return limit // the caller does not use the limit: do not grow it
	}
	gradient := max(0.5, min(1, tol*st.long/short))
	next := limit*gradient + queue
	return limit*(1-smooth) + next*smooth
}

// baseline folds a window's mean latency short into Gradient2's long-term
// average: the plain mean of the first 10 windows, then an exponential
// average with factor 2/(long+1) (Netflix's ExpAvgMeasurement), decayed
// by 5% a window while it is more than twice short (after a long
// overload, back to steady state).
func (st *state) baseline(short float64, long int) {
	if st.longCount < 10 {
		st.longCount++
		st.long += (short - st.long) / float64(st.longCount)
	} else {
		f := 2 / float64(long+1)
		st.long = st.long*(1-f) + short*f
	}
	if st.long/short > 2 {
		st.long *= 0.95
	}
}
