package route

import (
	"cmp"
	"context"
	"errors"
	"math/bits"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// Replica is one replica of a [Balancer]: a route plus the counters the
// balancer keeps for it. Pickers read it; only the Balancer changes it. Its
// methods are safe for concurrent use and do not block.
type Replica struct {
	// Route is the replica (a Model with its Health). Name identifies it in
	// Response.Route.
	Route portico.Route
	// Index is the replica's position in BalancerConfig.Replicas.
	Index int

	// count packs the two counters into one word, so that a pick costs one
	// atomic add and a Done another: picks in the high 40 bits, calls in
	// flight in the low 24.
	count atomic.Uint64
	done  func(DoneInfo)
}

const (
	inFlightBits = 24
	inFlightMask = 1<<inFlightBits - 1
	pickUnit     = 1<<inFlightBits | 1 // one more pick, one more in flight
)

// use is the replica's count with calls in flight in the high 24 bits and
// picks in the low 40, so that it orders replicas by calls in flight, then
// picks.
func (r *Replica) use() uint64 { return bits.RotateLeft64(r.count.Load(), 64-inFlightBits) }

// InFlight returns the calls placed on the replica and not yet done. It counts
// up to 2^24-1 (16,777,215) calls in flight at once on one replica.
func (r *Replica) InFlight() int { return int(r.count.Load() & inFlightMask) }

// Picks returns how many calls have been placed on the replica in total,
// modulo 2^40 (over a trillion).
func (r *Replica) Picks() uint64 { return r.count.Load() >> inFlightBits }

// Available reports whether the replica takes calls now (its Health, e.g. a
// breaker, is nil or available).
func (r *Replica) Available() bool { return r.Route.Available() }

// Strategy is a replica-choice policy. [NewBalancer] calls NewPicker once with
// its replicas and uses the returned [Picker] for every call (grpc-go's
// balancer builder and picker). A Strategy with settings that can be wrong
// should also have a method Validate() error, which NewBalancer calls first,
// returning its error, so that NewPicker is only given valid settings. The
// built-in strategies are [RoundRobin], [LeastInFlight], [Affinity] and
// [PrefixAware].
type Strategy interface {
	NewPicker(replicas []*Replica) Picker
}

// Picker chooses a replica for one call. Pick must be safe for concurrent use,
// must never block (no waiting for capacity: a full fleet is the caller's
// rate limiter's business), must return the Index of a replica that was
// available when checked, and must not modify info.Request. When no replica is
// available it returns an error wrapping [ErrNoRoute]. A non-nil
// PickResult.Done is called once when the call ends; the Balancer itself keeps
// the in-flight and pick counts. The built-in pickers may call a replica's
// Health.Available while holding their own lock (affinity's long calls,
// prefix-aware picks), so Available must not call back into the Balancer.
type Picker interface {
	Pick(info PickInfo) (PickResult, error)
}

// tokenBlind is implemented by built-in pickers that never read
// PickInfo.InputTokens, so the Balancer skips the estimate for them.
type tokenBlind interface {
	tokenBlind()
}

// feedbacker is implemented by built-in pickers that want feedback without a
// per-call closure: the Balancer calls done(i, d) when a call on replica i ends.
type feedbacker interface {
	done(i int, d DoneInfo)
}

// BalancerConfig configures a [Balancer].
type BalancerConfig struct {
	// Replicas are the copies of one model, each with a non-nil Model. They are
	// assumed to share capabilities, so the Fits filter is not applied among
	// them (put a Balancer inside a route whose Capabilities describe them).
	Replicas []portico.Route
	// Strategy chooses the replica; nil means [RoundRobin].
	Strategy Strategy
	// Estimator fills PickInfo.InputTokens for strategies that read it; nil
	// means portico.DefaultEstimator.
	Estimator portico.Estimator
}

// Balancer spreads calls over replicas of one model with an interchangeable
// [Strategy]: round robin, least in flight (power of two choices), session
// affinity (Autellix) or prefix-cache aware (Preble's E2).
// Replicas whose Health is not available are skipped.
//
// A balancer chooses among several Models rather than wrapping one, so it is a
// [portico.Model] itself ([Balancer.Generate]), used wherever a Model goes:
// typically as the Model of one route in a fallback group or router.
// [Balancer.Pick] is the picker alone, for callers (and simulations) that place
// calls themselves. Balancer is safe for concurrent use.
type Balancer struct {
	replicas []*Replica
	picker   Picker
	fb       feedbacker
	blind    bool // the picker ignores InputTokens
	est      portico.Estimator
}

// NewBalancer returns a Balancer for cfg, or an error starting "route:" when
// there are no replicas, one has a nil Model or invalid Capabilities
// ([portico.Capabilities.Validate]), or the Strategy's settings are
// invalid: a Strategy with a method Validate() error, as [Affinity] and
// [PrefixAware] have, is validated before its NewPicker is called, and its
// error returned.
func NewBalancer(cfg BalancerConfig) (*Balancer, error) {
	s := cmp.Or(cfg.Strategy, Strategy(RoundRobin{}))
	if err := cfg.check(s); err != nil {
		return nil, err
	}
	b := &Balancer{est: cmp.Or(cfg.Estimator, portico.DefaultEstimator)}
	b.replicas = make([]*Replica, len(cfg.Replicas))
	for i := range cfg.Replicas {
		r := &Replica{Route: cfg.Replicas[i], Index: i}
		r.done = func(d DoneInfo) {
			r.count.Add(^uint64(0)) // one fewer in flight
			if b.fb != nil {
				b.fb.done(r.Index, d)
			}
		}
		b.replicas[i] = r
	}
	b.picker = s.NewPicker(b.replicas)
	b.fb, _ = b.picker.(feedbacker)
	_, b.blind = b.picker.(tokenBlind)
	return b, nil
}

// check returns NewBalancer's error for cfg with strategy s, or nil.
func (cfg *BalancerConfig) check(s Strategy) error {
	if len(cfg.Replicas) == 0 {
		return errors.New("route: NewBalancer needs at least one replica")
	}
	return cmp.Or(checkCapabilities("NewBalancer", cfg.Replicas...), validate(s), checkModels("NewBalancer", "replica", cfg.Replicas))
}

// Replicas returns the balancer's replicas, in configuration order. The slice
// must not be modified.
func (b *Balancer) Replicas() []*Replica { return b.replicas }

// Pick chooses a replica for info (InputTokens filled from the Estimator when
// 0, unless the strategy ignores it, as round robin and least in flight do),
// counts the call in flight there, and returns the replica's index with a
// Done that must be called once when the call ends. It never blocks; with the
// built-in round-robin and least-in-flight strategies it does not allocate.
// Errors: an [*portico.Error] of class Rejected wrapping [ErrNoRoute] when no
// replica is available; a Permanent one when info.Request is nil. It panics if
// a custom [Picker] returns an index out of range.
func (b *Balancer) Pick(info PickInfo) (PickResult, error) {
	if info.Request == nil {
		return PickResult{Index: -1}, errNilRequest
	}
	if info.InputTokens <= 0 && !b.blind {
		info.InputTokens = b.est.EstimateInputTokens(info.Request)
	}
	pr, err := b.picker.Pick(info)
	if err != nil {
		return PickResult{Index: -1}, err
	}
	if uint(pr.Index) >= uint(len(b.replicas)) {
		panic("route: Picker returned replica index " + strconv.Itoa(pr.Index) + " out of range")
	}
	r := b.replicas[pr.Index]
	r.count.Add(pickUnit)
	pr.Done = r.doneThen(pr.Done)
	return pr, nil
}

// doneThen is the Done of a call placed on r: r's own (one fewer in
// flight, the picker's feedback), then the picker's pd when not nil.
func (r *Replica) doneThen(pd func(DoneInfo)) func(DoneInfo) {
	if pd == nil {
		return r.done
	}
	return func(d DoneInfo) { r.done(d); pd(d) }
}

// Generate picks a replica, calls it (with the replica's Route.ModelName, see
// [portico.Route.RequestFor]) and reports the outcome to the strategy. The
// answer is stamped with [portico.Route.Stamp]: Route names the replica, Cost
// is an inner layer's Cost or else the replica's price of the usage. Errors:
// the replica's error unchanged, one matching [portico.ErrNilResponse]
// (InvalidResponse) when it returned neither answer nor error, or Pick's
// error. A panic in the replica's Model ends the call's in-flight count and
// goes on up. A Balancer does not retry on another replica:
// put a retry or fallback layer around it.
func (b *Balancer) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	return pickAndCall(ctx, req, b.Pick, func(i int) *portico.Route { return &b.replicas[i].Route })
}

// picked is a picker's result for replica i of rs, or noReplica's error
// when i < 0.
func picked(rs []*Replica, i int) (PickResult, error) {
	if i < 0 {
		return PickResult{Index: -1}, noReplica(rs)
	}
	return PickResult{Index: i}, nil
}

// noReplica is the error of a picker that finds none of rs available: its
// RetryAfter is the least time until one takes calls again, 0 if unknown.
func noReplica(rs []*Replica) error {
	var wait time.Duration
	for _, r := range rs {
		wait = earliest(wait, r.Route.RetryAfter())
	}
	return &portico.Error{Class: portico.Rejected, RefusedBy: portico.CircuitBreaker, Reason: "no replica available", RetryAfter: wait, Err: ErrNoRoute}
}

// leastUsed returns the available replica with the fewest calls in flight,
// then the fewest picks, then the lowest index; -1 when none is available.
func leastUsed(rs []*Replica) int {
	best, least := -1, uint64(0)
	for i, r := range rs {
		if !r.Available() {
			continue
		}
		if u := r.use(); best < 0 || u < least {
			best, least = i, u
		}
	}
	return best
}
