package ratelimit

import (
	"cmp"
	"context"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// Limiter is a keyed rate limiter for LLM calls: per key, a request bucket
// and a token bucket in series, and an in-flight cap with shedding or a
// bounded fair queue (see the package documentation for the algorithms and
// their sources). Build it with [New]; its method value [Limiter.Wrap] is the
// [portico.Middleware]. A Limiter is safe for concurrent use, and its memory
// is bounded by the keys active within about one refill period (idle keys are
// evicted, by a timer too when no call comes).
type Limiter struct {
	cfg Config
	// limits are the limits in force by tier: Config.Limits at index 0
	// (the default), then Config.Tiers' in the order of their names. An
	// entry's tier is its index in limits, and tierIx maps a tier's name
	// to that. Both are fixed at New; SetLimit and SetTierLimit replace
	// what their pointers hold.
	limits []atomic.Pointer[Limits]
	tierIx map[string]uint8
	// pricing is what a call is priced against before its key is known:
	// see price. setMu serializes the changes of limits, which recompute it.
	pricing atomic.Pointer[pricing]
	setMu   sync.Mutex
	seed    maphash.Seed // picks a key's shard
	seq     atomic.Uint64
	shared  *shared     // nil: the buckets are in this process
	armed   atomic.Bool // the janitor's timer is pending or running (see arm)
	// lead is (N-1)/N for the local share of a shared Limiter failing open
	// among N instances, 0 otherwise: a call is admitted once the share
	// holds 1/N of its cost (see internal/failopen.Lead).
	lead   float64
	shards [numShards]shard
}

// New returns a Limiter for cfg, or an error starting with "ratelimit:" when
// cfg is invalid, naming the field (and the tier, for one of Config.Tiers):
// negative values (MaxProviderHold included), no limit at all, a burst
// without its limit, a DefaultMaxTokens that leaves TokenBurst no room for
// input, a Queue.Size without MaxInFlight, an unknown Mode or Queue.Order,
// Tier without Tiers or the reverse.
func New(cfg Config) (*Limiter, error) {
	c, err := cfg.norm()
	if err != nil {
		return nil, err
	}
	l := &Limiter{cfg: c, seed: maphash.MakeSeed(), limits: make([]atomic.Pointer[Limits], len(c.Tiers)+1), tierIx: map[string]uint8{}}
	lim := c.Limits
	l.limits[0].Store(&lim)
	for i, name := range slices.Sorted(maps.Keys(c.Tiers)) {
		t := c.Tiers[name]
		l.limits[i+1].Store(&t)
		l.tierIx[name] = uint8(i + 1)
	}
	l.reprice()
	if c.Shared.Store != nil {
		l.shared = newShared(l, c)
	}
	return l, nil
}

// Wrap is the [portico.Middleware]: the returned Model admits each call
// through next's key's buckets and in-flight cap, calls next, and refunds the
// unused part of the token reservation when the call ends ([Refund]). It
// never modifies the Request. Wrap panics if next is nil, a typed nil
// included ([portico.IsNil]). Besides next's own errors it returns:
//
//   - Incompatible wrapping a [*CapacityError] ([ErrOverCapacity]) when
//     N_in + N_max exceeds the token bucket's capacity (at once, or when
//     [Limiter.SetLimit] lowers it under a waiting call), unless only a
//     [portico.Scaled] Estimator's learned scale puts it over (see the
//     package doc);
//   - Permanent wrapping [ErrBadRequest] when the call cannot be priced;
//   - RateLimited wrapping [ErrLimited], RetryAfter the exact wait that
//     would admit the call, when a bucket refuses;
//   - Rejected wrapping [ErrOverloaded] when the in-flight cap (less
//     Config.Reserve for the call's priority) and the queue are full, or
//     when a call of higher priority takes the queued call's place;
//   - [portico.Gone]'s error, nothing taken, when ctx is done already;
//   - [portico.FromContext]'s error when ctx ends while the call waits;
//   - [portico.ErrNilRequest] for a nil *Request;
//   - [portico.ErrNilResponse] when next returns neither a Response nor an
//     error (nothing is given back).
func (l *Limiter) Wrap(next portico.Model) portico.Model {
	portico.PanicIfNil(next, "ratelimit: Wrap of a nil Model")
	if l.shared != nil {
		return l.shared.wrap(next)
	}
	return &limited{l: l, next: next}
}

type limited struct {
	l    *Limiter
	next portico.Model
}

func (m *limited) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	return m.l.generate(ctx, m.next, req)
}

// ticket is what admission hands to completion.
type ticket struct {
	e       *entry
	reserve int           // N_in + N_max taken from the token bucket
	in, max int           // N_in, N_max
	prog    *program      // for FCFSProgram, PLAS and ATLAS
	start   time.Duration // slot grant (mono.Now), when prog != nil
	path    time.Duration // ATLAS: the program's critical path at the grant
	// unpriced is why the call could not be priced, when not every key's
	// limits have a token bucket: admit refuses it on a key with one.
	unpriced error
	// With Config.Concurrency: admission (mono.Now), the key's calls in
	// flight then, this one included, and the time the caller's OnChunk
	// held the stream (see reader).
	granted  time.Duration
	inflight int
	read     time.Duration
	// base is the need on the Estimator's unscaled estimate when it is
	// [portico.Scaled] and the reserve exceeds the least capacity in force
	// at pricing, else 0; est is the Estimator's N_in when fit lowered
	// in, else 0 (the observer learns from the estimate it gave).
	base, est int
}

// reader times the caller's OnChunk on a streamed call for a Concurrency:
// the time a slow reader holds the stream is not the destination's latency
// (as retry's ChunkGap leaves it out), so one tenant's slow client cannot
// shrink an adaptive limit that every tenant shares. held is atomic: a
// Model may return while its stream's goroutine still delivers a chunk.
type reader struct {
	portico.StreamWatch
	held atomic.Int64 // time.Duration
}

// GateChunk delivers c itself, timing the caller's OnChunk.
func (r *reader) GateChunk(c portico.Chunk, _ bool) (bool, error) {
	t0 := mono.Now()
	err := r.Deliver(c)
	r.held.Add(int64(mono.Now() - t0))
	return false, err
}

func (l *Limiter) keyOf(req *portico.Request) key {
	if l.cfg.Key != nil {
		return key{a: l.cfg.Key(req)}
	}
	return key{a: req.Identity.ClientKey, b: req.Model}
}

func (l *Limiter) generate(ctx context.Context, next portico.Model, req *portico.Request) (*portico.Response, error) {
	if err := portico.Unstarted(ctx, req); err != nil {
		return nil, err // no slot, no token, no place in line
	}
	t := ticket{}
	if err := l.prePrice(req, &t); err != nil {
		return nil, err
	}
	if err := l.admit(ctx, req, &t, mono.Now()); err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done { // next panicked: free the slot, refund nothing, re-panic
			l.complete(req, &t, nil, nil, true)
		}
	}()
	resp, err := l.run(ctx, next, req, &t)
	done = true
	l.complete(req, &t, resp, err, false)
	return resp, err
}

// run calls next for req, admitted with t, timing the caller's OnChunk
// into t.read when a Concurrency learns from the call's latency (see
// reader).
func (l *Limiter) run(ctx context.Context, next portico.Model, req *portico.Request, t *ticket) (*portico.Response, error) {
	if l.cfg.Concurrency == nil || req.OnChunk == nil {
		return portico.Answer(next.Generate(ctx, req))
	}
	rd := &reader{}
	resp, err := portico.Answer(next.Generate(ctx, rd.Watch(req, rd)))
	t.read = time.Duration(rd.held.Load())
	return resp, err
}

// prePrice prices req against the limits in force before its key is
// known (see pricing), when any has a token bucket. An error is the
// call's when every key would refuse it (strict); otherwise admit checks
// the price against the key's own limits: t keeps the error of a call
// that could not be priced at all (t.unpriced), refused on a key with a
// token bucket.
func (l *Limiter) prePrice(req *portico.Request, t *ticket) error {
	p := l.pricing.Load()
	if p.burst == 0 {
		return nil
	}
	err := l.price(req, p, t)
	switch {
	case err == nil || p.strict:
		return err
	case t.reserve == 0:
		t.unpriced = err
	}
	return nil
}

// price computes N_in and N_max and checks the reserve against capacity,
// burst. Over it, t holds N_in, N_max and their sum (saturated) as well as
// the error, for admit to check against the key's own capacity when a tier
// is larger.
func (l *Limiter) price(req *portico.Request, p *pricing, t *ticket) error {
	nMax, err := outputReserve(req, p.def)
	if err != nil {
		return err
	}
	nIn := l.cfg.Estimator.EstimateInputTokens(req)
	if nIn < 0 {
		return badRequest(req, "negative input token estimate")
	}
	t.in, t.max, t.reserve = nIn, nMax, satAdd(nIn, nMax)
	if t.reserve > p.least { // over some key's capacity: rare
		t.base = l.unscaled(req, nMax)
	}
	if t.fit(p.burst) {
		return nil
	}
	return l.overCapacity(req.Model, nIn, nMax, p.burst)
}

// outputReserve returns N_max for req: its MaxOutputTokens, or else def
// (Config.DefaultMaxTokens) plus the reasoning budget req asks for, 0 for
// an embedding; or the error of a call that cannot be priced.
func outputReserve(req *portico.Request, def int) (int, error) {
	switch n := req.MaxOutputTokens; {
	case n < 0:
		return 0, badRequest(req, "negative MaxOutputTokens")
	case n > 0 || req.Embedding != nil: // an embedding has no output to reserve
		return n, nil
	case def == RequireMaxTokens:
		return 0, badRequest(req, "no MaxOutputTokens, and Config.DefaultMaxTokens requires one")
	}
	return req.OutputBound(def), nil // the default plus a reasoning budget
}

// badRequest is the error of a call that cannot be priced, for reason.
func badRequest(req *portico.Request, reason string) error {
	return &portico.Error{Class: portico.Permanent, Model: req.Model, Reason: reason, NotSent: true, Err: ErrBadRequest}
}

// satAdd returns a + b for b >= 0, saturated at math.MaxInt.
func satAdd(a, b int) int {
	if b > math.MaxInt-a {
		return math.MaxInt
	}
	return a + b
}

// priceIn prices req for lim's buckets in a shared store, against lim's
// own TokenBurst (the store decides for the call's tier alone); t stays
// zero when lim has no token bucket.
func (l *Limiter) priceIn(req *portico.Request, lim *Limits, t *ticket) error {
	if lim.Tokens == 0 {
		return nil
	}
	p := *l.pricing.Load()
	p.burst = lim.TokenBurst
	return l.price(req, &p, t)
}

// unscaled returns req's need N_in + N_max on the Estimator's unscaled
// estimate when it is [portico.Scaled] (0 otherwise, or for a negative
// estimate), saturated. Only a call over some key's capacity asks it.
func (l *Limiter) unscaled(req *portico.Request, nMax int) int {
	s, ok := l.cfg.Estimator.(portico.Scaled)
	if !ok {
		return 0
	}
	if in := s.BaseInputTokens(req); in >= 0 {
		return satAdd(in, nMax) // saturated: over every capacity
	}
	return 0
}

// fit reports whether t's reserve fits a token bucket of the given
// capacity, lowering it to the capacity first when only the Estimator's
// learned scale puts it over: a calibration never makes a call that its
// unscaled estimate fits a permanent refusal (see [portico.Scaled]). The
// call then reserves the whole bucket, capacity - N_max of it as N_in,
// and settles on its usage as any call does.
func (t *ticket) fit(capacity int) bool {
	if t.reserve <= capacity {
		return true
	}
	if t.base <= 0 || t.base > capacity {
		return false
	}
	t.est = cmp.Or(t.est, t.in)
	t.in, t.reserve = capacity-t.max, capacity
	return true
}

// pricing is what generate prices a call against before it knows the
// call's key, and so its tier: burst is the largest TokenBurst of the
// limits in force (0: none has a token bucket, and calls are not priced),
// and strict says every one has a token bucket, so that a call price
// refuses would be refused on any key. Otherwise admit checks the price
// against the key's own limits (see ticket.unpriced). Without tiers it is
// the default limits' TokenBurst, strict. def is N_max for a request
// without MaxOutputTokens (see Config.DefaultMaxTokens).
type pricing struct {
	burst  int
	least  int // the least TokenBurst of the limits in force (math.MaxInt: none)
	strict bool
	def    int
}

// limitsOf returns the limits in force for tier ix (0: the default).
func (l *Limiter) limitsOf(ix uint8) *Limits { return l.limits[ix].Load() }

// allLimits returns the limits in force, by tier index (0: the default).
func (l *Limiter) allLimits() []*Limits {
	all := make([]*Limits, len(l.limits))
	for ix := range all {
		all[ix] = l.limitsOf(uint8(ix))
	}
	return all
}

// tierOf returns the index of req's tier, 0 for the default limits.
func (l *Limiter) tierOf(req *portico.Request) uint8 {
	if l.cfg.Tier == nil {
		return 0
	}
	return l.tierIx[l.cfg.Tier(req)]
}

// reprice recomputes l.pricing from the limits in force. The caller holds
// setMu, or is New.
func (l *Limiter) reprice() {
	p := pricing{strict: true, least: math.MaxInt, def: cmp.Or(l.cfg.DefaultMaxTokens, DefaultMaxTokens)}
	sh := l.cfg.Shared
	for _, lim := range l.allLimits() {
		if lim.Tokens == 0 {
			p.strict = false
			continue
		}
		p.burst = max(p.burst, lim.TokenBurst)
		p.least = min(p.least, lim.TokenBurst)
		if l.cfg.DefaultMaxTokens == 0 {
			b := lim.TokenBurst
			if sh.FailOpen {
				b = scale(*lim, sh.Instances).TokenBurst
			}
			p.def = min(p.def, max(b/2, 1))
		}
	}
	l.pricing.Store(&p)
}
