package adaptive

import (
	"cmp"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/rules"
)

// Defaults used for zero [Config] fields: Netflix concurrency-limits'
// initial and maximum limits (its minimum, 20, suits servers; an LLM route
// may sustain fewer calls), and its windowed limits' least samples per
// window.
const (
	DefaultInitial = 20
	DefaultMin     = 1
	DefaultMax     = 200
	DefaultWindow  = 10
)

// maxWindow bounds Config.Window, so that a window's count and latency sum
// fit one atomic word (see Limit.acc).
const maxWindow = 1000

// Config configures a [Limit]. The zero Config is usable: Gradient2 from 20
// calls, between 1 and 200, updated every 10 samples.
type Config struct {
	// Algorithm moves the limit: an [AIMD], [Vegas] or [Gradient2] value.
	// Nil means Gradient2{}.
	Algorithm Algorithm
	// Initial is the limit before any sample, in calls in flight. Zero means
	// [DefaultInitial] (20), capped at Max.
	Initial int
	// Min and Max bound the limit. Zero means [DefaultMin] (1) and
	// [DefaultMax] (200); Min above Max, or a negative value, is an error.
	Min, Max int
	// Window is how many samples are averaged into each update of the limit
	// (Netflix's WindowedLimit, without its time bound). Zero means
	// [DefaultWindow] (10); above 1,000 or negative is an error.
	Window int
}

// Limit is an adaptive limit on calls in flight to one destination, moved
// by its [Algorithm] from the latency and the failures of the calls it is
// told about. It implements
// [github.com/portico-llm/portico/ratelimit.Concurrency]: set it as a
// ratelimit.Config's Concurrency and the Limiter caps each key's calls in
// flight at Limit(), queueing or shedding the others as it does for
// Limits.MaxInFlight, and reports each call back with Done. Safe for
// concurrent use.
type Limit struct {
	alg      Algorithm
	min, max float64
	window   uint64
	limit    atomic.Int64
	// The window under way: acc packs the samples (low 16 bits) and the sum
	// of their latencies in microseconds (high 48), so that one atomic add
	// records a sample and one swap takes a whole window; drops and inflight
	// (the most in flight) are kept beside it.
	acc      atomic.Uint64
	drops    atomic.Int64
	inflight atomic.Int64
	mu       sync.Mutex // guards st and est
	st       state
	est      float64
}

// New returns a Limit configured by cfg, or an error starting with
// "adaptive:" and naming the field for a negative bound, Min above Max, a
// Window above 1,000, or an Algorithm setting out of its range.
func New(cfg Config) (*Limit, error) {
	alg := cmp.Or[Algorithm](cfg.Algorithm, Gradient2{})
	if err := alg.validate(); err != nil {
		return nil, err
	}
	lo, hi := float64(cmp.Or(cfg.Min, DefaultMin)), float64(cmp.Or(cfg.Max, DefaultMax))
	if err := rules.First(
		rules.If(min(cfg.Initial, cfg.Min, cfg.Max, cfg.Window) < 0, "adaptive: negative Config.Initial, Min, Max or Window"),
		rules.If(cfg.Window > maxWindow, "adaptive: Config.Window above 1000"),
		rules.If(lo > hi, "adaptive: Config.Min above Config.Max"),
	); err != nil {
		return nil, err
	}
	l := &Limit{alg: alg, min: lo, max: hi, window: uint64(cmp.Or(cfg.Window, DefaultWindow))}
	l.est = min(hi, max(lo, float64(cmp.Or(cfg.Initial, DefaultInitial))))
	l.limit.Store(int64(l.est))
	return l, nil
}

// MustNew is like [New] but panics on a configuration error.
func MustNew(cfg Config) *Limit { return portico.Must(New(cfg)) }

// Limit returns the limit now: the most calls that should be in flight, at
// least Config.Min. One atomic load.
func (l *Limit) Limit() int { return int(l.limit.Load()) }

// Done reports a call that ended after latency (from its admission), with
// inflight calls in flight, itself included, when it was admitted, and
// outcome class, which says what the sample is:
//
//   - [portico.OK], [portico.InvalidResponse]: an answer, a latency sample;
//   - [portico.RateLimited], [portico.Transient], [portico.Ambiguous]: a
//     drop, which marks its window but whose latency is left out of the
//     window's mean (as Netflix's addDroppedSample; see Drops in the
//     package documentation);
//   - any other class (the caller's cancellation or [portico.Deadline], a
//     client error, a local rejection, an unusable route): ignored, since
//     it says nothing of the destination's capacity (package ratelimit
//     reports a cut of the caller's deadline, [portico.ErrDeadlineCut], as
//     Deadline).
//
// Every Config.Window samples, the call that completes the window updates
// the limit. Done allocates nothing and takes no lock but then.
func (l *Limit) Done(latency time.Duration, inflight int, class portico.Class) {
	// A drop counts towards its window and marks it, but its latency (a
	// 503 that came back at once, a timeout's) is not the destination's:
	// as Netflix's addDroppedSample, it is left out of the window's mean.
	var us uint64
	switch class {
	case portico.OK, portico.InvalidResponse:
		us = uint64(max(latency, 0) / time.Microsecond)
	case portico.RateLimited, portico.Transient, portico.Ambiguous:
		l.drops.Add(1)
	default:
		return
	}
	m := int64(inflight) // the most in flight: raised, never lowered, until update swaps it
	for v := l.inflight.Load(); v < m && !l.inflight.CompareAndSwap(v, m); v = l.inflight.Load() {
	}
	if n := l.acc.Add(1 | us<<16); n&(1<<16-1) == l.window {
		l.update()
	}
}

// update takes the window under way and moves the limit.
func (l *Limit) update() {
	acc := l.acc.Swap(0)
	drops := int(l.drops.Swap(0))
	w := window{n: int(acc & (1<<16 - 1)), dropped: drops > 0, inflight: int(l.inflight.Swap(0))}
	if w.n == 0 {
		return
	}
	// The mean latency of the samples that were not drops; 0 when all were
	// (drops and samples are counted apart, so a drop racing the swap may
	// be counted in the next window: ok is then off by one).
	if ok := w.n - drops; ok > 0 {
		w.rtt = time.Duration(acc>>16) * time.Microsecond / time.Duration(ok)
	}
	l.mu.Lock()
	est := l.alg.update(&l.st, l.est, w)
	if math.IsNaN(est) {
		est = l.est
	}
	l.est = min(l.max, max(l.min, est))
	l.limit.Store(int64(l.est))
	l.mu.Unlock()
}
