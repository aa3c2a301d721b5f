package hedge

import (
	"cmp"
	"context"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/due"
	"github.com/portico-llm/portico/internal/rules"
)

// Defaults used for zero [Config] fields.
const (
	// DefaultPercentile is the quantile of the destination's latency waited
	// before hedging: 0.95, as in Dean and Barroso's "The Tail at Scale",
	// which bounds the extra load to about 5% of requests.
	DefaultPercentile = 0.95
	// DefaultMaxInFlight is the most attempts of one request in flight: the
	// first and one hedge.
	DefaultMaxInFlight = 2
)

// Config configures a [Hedger]. The zero Config hedges once, after the 95th
// percentile of the destination's latency, once 50 latencies are known.
type Config struct {
	// Delay is the fixed wait before a hedge (time), when Percentile is
	// zero; with a Percentile it is the wait used until the destination's
	// sketch holds 50 latencies. Zero means no hedge until then (with both
	// zero, the Percentile is [DefaultPercentile]); negative is an error.
	Delay time.Duration
	// Percentile is the quantile of the destination's latency, in (0, 1),
	// after which a hedge is sent: time to the first chunk of a streamed
	// request, to the answer otherwise. Zero means a fixed Delay when Delay
	// is set, else [DefaultPercentile]; outside [0, 1) is an error.
	Percentile float64
	// MaxInFlight is the most attempts of one request in flight at once,
	// the first included: a hedge is sent only while fewer run, and never
	// more in all than this on one destination. Zero means
	// [DefaultMaxInFlight] (2); 1 disables hedging; negative is an error.
	// (Package retry's MaxAttempts counts attempts one after the other.)
	MaxInFlight int
	// Budget, when non-nil, is charged one token per hedge, and a hedge it
	// refuses is not sent (the running attempts go on); usually the
	// destination's retry.Retrier. Nil means hedges are bounded by
	// MaxInFlight and the delay only.
	Budget Budget
	// Destination names the destination in the budget and in events. Empty
	// means the request's Model.
	Destination string
	// Cost, when non-nil, estimates what one attempt of a request may be
	// billed, in the unit of its Contract.MaxCost (package stack sets the
	// route's Capabilities.EstimateCost). Since every attempt may be billed,
	// a hedge that would make the attempts sent cost more than a positive
	// MaxCost is not sent (a [portico.EventHedge] with Reason "max cost"),
	// as a fallback group does. It is called on the goroutine that sends
	// the hedge, so it must be safe for concurrent use. Nil means hedges
	// are not bounded by cost.
	Cost func(*portico.Request) float64
}

// Hedger sends a second attempt of a request that has not answered after a
// delay (fixed, or a percentile of the destination's observed latency),
// takes the first answer and cancels the others: Dean and Barroso's hedged
// requests. Build one with [New]; its method value Wrap is the
// [portico.Middleware] for one destination, and package fallback uses
// [Hedger.Run] to hedge to the next route of a group. A Hedger is safe for
// concurrent use.
type Hedger struct {
	fixed       time.Duration
	percentile  float64
	maxInFlight int
	budget      Budget
	dest        string
	cost        func(*portico.Request) float64
}

// New returns a Hedger configured by cfg, or an error starting with
// "hedge:" and naming the field for a negative Delay or MaxInFlight, or a
// Percentile outside [0, 1).
func New(cfg Config) (*Hedger, error) {
	if err := rules.First(
		rules.If(cfg.Delay < 0, "hedge: negative Config.Delay"),
		rules.If(cfg.MaxInFlight < 0, "hedge: negative Config.MaxInFlight"),
		rules.If(!(cfg.Percentile >= 0 && cfg.Percentile < 1), "hedge: Config.Percentile outside [0, 1)"),
	); err != nil {
		return nil, err
	}
	h := &Hedger{fixed: cfg.Delay, percentile: cfg.Percentile, maxInFlight: cmp.Or(cfg.MaxInFlight, DefaultMaxInFlight),
		budget: cfg.Budget, dest: cfg.Destination, cost: cfg.Cost}
	if h.percentile == 0 && h.fixed == 0 {
		h.percentile = DefaultPercentile
	}
	return h, nil
}

// MustNew is like [New] but panics on a configuration error.
func MustNew(cfg Config) *Hedger { return portico.Must(New(cfg)) }

// Applies reports whether h may hedge req: it allows more than one attempt,
// req may be sent twice (see [MayRepeat]) and is not itself a hedge
// ([portico.Request.Hedge]: hedging it again would multiply the extra load
// that MaxInFlight bounds).
func (h *Hedger) Applies(req *portico.Request) bool {
	return h.maxInFlight > 1 && MayRepeat(req) && !req.Hedge
}

// MayRepeat reports whether req may be sent to a model twice at once: true
// unless its caller set [portico.Request.NoAmbiguousRetry]. Generation has
// no side effect besides its cost, and the field that forbids paying twice
// for an ambiguous attempt forbids a hedge too. Package fallback asks the
// same question here.
func MayRepeat(req *portico.Request) bool { return !req.NoAmbiguousRetry }

// delay returns the wait before a hedge after an attempt started at start
// to the destination of sketch l, and false when no hedge may follow it:
// h allows one attempt in flight, the delay is not known (no fixed delay,
// and the percentile not yet known), or it ends after ctx's deadline (or
// the one ctx carries, package due).
func (h *Hedger) delay(ctx context.Context, l *Latency, start time.Time) (time.Duration, bool) {
	d, ok := h.wait(l)
	if !ok || h.maxInFlight < 2 {
		return d, false
	}
	dl, bounded := due.Deadline(ctx)
	return d, !bounded || d < dl.Sub(start)
}

// wait returns the wait before a hedge after an attempt to the destination
// of sketch l: the percentile of l once known, else the fixed Delay; false
// when neither is.
func (h *Hedger) wait(l *Latency) (time.Duration, bool) {
	if h.percentile > 0 && l != nil {
		if d, ok := l.quantile(h.percentile); ok {
			return d, true
		}
	}
	return h.fixed, h.fixed > 0
}

// Wrap returns next wrapped in the hedging policy for one destination; the
// method value h.Wrap is a [portico.Middleware]. Wrap panics if next is nil, a typed nil included ([portico.IsNil]).
//
// The returned Model passes a request it may not hedge ([Hedger.Applies])
// to next as it is, and any other through [Hedger.Run]: a hedge to next
// itself after the delay, while fewer than MaxInFlight run and at most
// MaxInFlight in all, each charged to Config.Budget and reported as a
// [portico.EventHedge]. The first answer wins; the others are canceled,
// which their limiters and breakers see as a cancellation. A failure ends
// the call when no other attempt runs, or at once when another could not
// help ([portico.Permanent], [portico.Incompatible], [portico.Unusable],
// the caller's [portico.Canceled] or [portico.Deadline] or a cut of its
// deadline, [portico.IsDeadlineCut]; the hedge column of
// [portico.FaultOf]); the call's error
// is then that attempt's. A nil request fails with [portico.ErrNilRequest],
// and a context done already with [portico.Gone]'s error, nothing sent.
// Each wrapped Model keeps its own latency sketch: wrap each destination on
// its own, as package stack does.
func (h *Hedger) Wrap(next portico.Model) portico.Model {
	portico.PanicIfNil(next, "hedge: Wrap of a nil Model")
	return &model{h: h, next: next}
}

type model struct {
	h       *Hedger
	next    portico.Model
	latency Latency
}

// Generate passes a request h may not hedge through at the cost of a
// branch. While no hedge could be sent (the percentile is not known and no
// Delay is set, or the delay ends after the deadline), it calls next
// inline and times the answer for the sketch.
func (m *model) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := portico.Unstarted(ctx, req); err != nil {
		return nil, err // a nil req, or the caller has gone: no attempt, no hedge
	}
	h := m.h
	if !h.Applies(req) {
		return m.next.Generate(ctx, req)
	}
	start := time.Now()
	if _, ok := h.delay(ctx, &m.latency, start); !ok {
		return m.learn(ctx, req, start)
	}
	resp, _, err := h.Run(ctx, req, &single{m: m, req: req, dest: cmp.Or(h.dest, req.Model)})
	return resp, err
}

// learn calls next inline, as started at start, and adds the latency of its
// answer (of its first chunk when streaming) to the sketch when h waits a
// percentile of it.
func (m *model) learn(ctx context.Context, req *portico.Request, start time.Time) (*portico.Response, error) {
	if m.h.percentile == 0 {
		return m.next.Generate(ctx, req)
	}
	if req.OnChunk == nil {
		resp, err := m.next.Generate(ctx, req)
		if err == nil && resp != nil {
			m.latency.Add(time.Since(start))
		}
		return resp, err
	}
	t := &timing{start: start, latency: &m.latency}
	return m.next.Generate(ctx, t.Watch(req, t))
}

// timing is a streamed call's watch while the sketch learns: it times the
// first chunk.
type timing struct {
	portico.StreamWatch
	start   time.Time
	latency *Latency
}

// GateChunk passes every chunk, adding the first one's latency to the sketch.
func (t *timing) GateChunk(_ portico.Chunk, delivered bool) (bool, error) {
	if !delivered {
		t.latency.Add(time.Since(t.start))
	}
	return true, nil
}
