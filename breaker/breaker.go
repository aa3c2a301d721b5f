package breaker

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/mono"
	"github.com/portico-llm/portico/internal/window"
)

// State is a breaker's state.
type State uint8

// The three states of a circuit breaker (Nygard, "Release It!", 2007).
const (
	// Closed: calls go through and their outcomes are counted.
	Closed State = iota
	// Open: calls fail at once with [ErrOpen] until the open interval ends.
	Open
	// HalfOpen: up to Config.Probes calls at a time go through as probes; the
	// others fail at once with [ErrOpen].
	HalfOpen
)

// String returns "closed", "open" or "half_open", the values of
// [portico.EventBreakerState]'s Reason.
func (s State) String() string { return enum.Name(stateNames[:], s, "State") }

var stateNames = [...]string{Closed: "closed", Open: "open", HalfOpen: "half_open"}

// ErrOpen is the sentinel of every call the breaker refuses: open, half-open
// with its probes busy, or closed while a breaker sharing its state is open
// (Config.Shared). The error returned is a [*portico.Error] of class
// [portico.Rejected] whose Err is ErrOpen and whose RetryAfter is the time until
// the breaker admits a probe (0 in half-open), RefusedBy
// [portico.CircuitBreaker] and NotSent set: errors.Is(err, breaker.ErrOpen)
// and errors.Is(err, portico.ErrRejected) both hold.
var ErrOpen = errors.New("breaker: open")

// Transition describes one state change, as passed to Config.OnStateChange.
type Transition struct {
	// Name is Config.Name.
	Name string
	// From and To are the states before and after.
	From, To State
	// Reason says why, content-free: the [TripRule]'s reason from closed to
	// open ("consecutive failures", "failure rate", "slow call rate" for the
	// ready-made rules), "open interval elapsed" (open to half-open), "probe
	// failed", "probe slow" (half-open to open), "probes succeeded" (half-open
	// to closed).
	Reason string
	// Class is the class of the failure that caused a trip; OK otherwise,
	// including a trip by a slow call that succeeded.
	Class portico.Class
	// OpenFor is how long the breaker will stay open when To is Open; 0 otherwise.
	OpenFor time.Duration
	// Generation numbers the transitions of one breaker from 1, in order.
	Generation uint64
}

// Breaker is a circuit breaker for one route: it counts the outcomes of the
// calls it guards, trips open when the route looks down, fails calls at once
// while open, then probes the route and closes once probes succeed. See the
// package documentation for the rules.
//
// A Breaker is safe for concurrent use. Its closed state does not allocate
// (unless the request streams: two allocations, see [Breaker.Wrap]) and takes
// no lock (a time-based window locks once per bucket width, to reset the
// bucket that starts); locks are taken on transitions and in the half-open
// state.
// It implements [portico.Health], so a [portico.Route] whose Health is the
// Breaker is skipped by routers and fallbacks while open.
type Breaker struct {
	// word is gen<<2 | state: one load gives both. gen counts transitions.
	word atomic.Uint64
	// openUntil is when the open state ends, a reading of mono.Now.
	openUntil atomic.Int64
	// announced is the latest end of a Retry-After a counted failure carried,
	// a reading of mono.Now: the open state never ends before it.
	announced atomic.Int64
	// probes is the number of half-open probes in flight (written under mu).
	probes atomic.Int32
	// consec is gen<<32 | consecutive failures in closed generation gen.
	consec atomic.Uint64

	cfg       Config        // with defaults
	sharedKey string        // "breaker:" + Config.Name
	count     *window.Count // the count-based window, or
	time      *window.Time  // the time-based one

	mu        sync.Mutex // guards transitions and the field below
	successes int        // successful probes in this half-open period
}

// New returns a closed Breaker configured by cfg. It returns an error, whose
// message starts with "breaker:", when a field is out of range (see [Config]).
func New(cfg Config) (*Breaker, error) {
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	b := &Breaker{cfg: c, sharedKey: "breaker:" + c.Name}
	b.announced.Store(math.MinInt64)
	if d := c.Window.Duration; d > 0 {
		b.time = window.NewTime(mono.Now(), d/timeBuckets, timeBuckets)
	} else {
		b.count = window.NewCount(c.Window.Calls)
	}
	return b, nil
}

// MustNew is like [New] but panics on a configuration error.
func MustNew(cfg Config) *Breaker { return portico.Must(New(cfg)) }

// State returns the current state: Open also while this breaker, closed,
// rejects calls because one sharing its state is open (Config.Shared), as
// it then behaves. It never blocks: one atomic load, and when shared and
// closed one Until of the store (a local read). When this breaker's own
// Open interval has ended it stays Open until the next call moves it to
// HalfOpen; [Breaker.Available] tells whether that call would be let
// through. An Open read from a shared breaker ends in Closed, no HalfOpen.
// Config.OnStateChange reports this breaker's own transitions only.
func (b *Breaker) State() State {
	s := State(b.word.Load() & 3)
	if s == Closed && b.openElsewhere() > 0 {
		return Open
	}
	return s
}

// Available implements [portico.Health]: it reports whether a call made now
// would be attempted rather than rejected at once. Closed: true, unless a
// breaker sharing its state is open (Config.Shared); Open: whether
// the open interval has ended (a probe is due); HalfOpen: whether a probe slot
// is free. It never blocks; in the closed state it is one atomic load.
func (b *Breaker) Available() bool {
	switch State(b.word.Load() & 3) {
	case Closed:
		return b.openElsewhere() == 0
	case Open:
		return int64(mono.Now()) >= b.openUntil.Load()
	}
	return int(b.probes.Load()) < b.cfg.Probes
}

// RetryAfter implements [portico.Health]: the time left of the open
// interval, when Open, or of another's shared one (Config.Shared), when
// Closed; 0 otherwise (a busy probe slot frees when its probe ends, at a
// time nobody knows). It never blocks.
func (b *Breaker) RetryAfter() time.Duration {
	switch State(b.word.Load() & 3) {
	case Open:
		return max(0, time.Duration(b.openUntil.Load())-mono.Now())
	case Closed:
		return b.openElsewhere()
	}
	return 0
}

// openElsewhere returns the time left of the open interval published under
// the breaker's key in Config.Shared, 0 when none is ahead or nothing is
// shared. It reads the clock only when the store holds one.
func (b *Breaker) openElsewhere() time.Duration {
	if b.cfg.Shared == nil {
		return 0
	}
	return b.sharedLeft()
}

// sharedLeft is openElsewhere with Config.Shared set.
func (b *Breaker) sharedLeft() time.Duration {
	u := b.cfg.Shared.Until(b.sharedKey)
	if u.IsZero() {
		return 0
	}
	return max(0, time.Until(u))
}

// MaxRetryAfterHold bounds how long a Retry-After holds a breaker open past
// the failure that carried it: a hint of hours (a misconfigured proxy, a
// daily quota's reset) keeps the route out for 5 minutes, then a probe
// asks again. OpenFor itself is not bounded by it.
const MaxRetryAfterHold = 5 * time.Minute

// announce raises b.announced to the end of err's Retry-After, if any,
// counted from now and held MaxRetryAfterHold at most.
func (b *Breaker) announce(now time.Duration, err error) {
	ra := portico.RetryAfterOf(err)
	if ra <= 0 {
		return
	}
	until := int64(now + min(ra, MaxRetryAfterHold))
	for {
		cur := b.announced.Load()
		if until <= cur || b.announced.CompareAndSwap(cur, until) {
			return
		}
	}
}

// Wrap returns next guarded by b; the method value b.Wrap is a
// [portico.Middleware]. One Breaker guards one route: Models wrapped by the
// same Breaker share its state. Wrap panics if next is nil, a typed nil included ([portico.IsNil]).
//
// Besides next's own results, the returned Model's Generate returns a
// [portico.Rejected] *portico.Error wrapping [ErrOpen] when the breaker
// refuses the call, [portico.ErrNilRequest] for a nil *Request (next not
// called, nothing counted), [portico.Gone]'s error for a context done
// already (next not called, no probe slot taken, nothing counted), and
// [portico.ErrNilResponse] (counted as a route
// fault) when next returns neither a Response nor an error. A panic in next
// counts as a failure and goes on, after the probe slot it held is released.
// A streamed call that the caller's own OnChunk ended (a panic or an error)
// is not counted at all, like a cancellation; a streamed call costs two
// allocations (see Cost in the package documentation).
func (b *Breaker) Wrap(next portico.Model) portico.Model {
	portico.PanicIfNil(next, "breaker: Wrap of a nil Model")
	return &guarded{b: b, next: next}
}

type guarded struct {
	b    *Breaker
	next portico.Model
}

// Generate implements portico.Model.
func (g *guarded) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := portico.Unstarted(ctx, req); err != nil {
		return nil, err // a nil req, or the caller has gone: no probe slot taken, nothing counted
	}
	word := g.b.word.Load()
	if State(word&3) != Closed {
		return g.b.notClosed(ctx, req, g.next, word)
	}
	return g.b.closedCall(ctx, req, g.next, word)
}

// closedCall is a call in closed state word: no lock, no allocation unless
// the request streams (see guardStream), no clock read unless the window
// is time-based or slow calls are detected.
func (b *Breaker) closedCall(ctx context.Context, req *portico.Request, next portico.Model, word uint64) (*portico.Response, error) {
	if left := b.openElsewhere(); left > 0 {
		return nil, b.rejected(left, "breaker open elsewhere")
	}
	var start time.Duration
	if b.cfg.SlowCall > 0 {
		start = mono.Now()
	}
	return b.call(ctx, req, next, word, start)
}

// call makes next's call, started at start in state word (closed, or
// half-open for a probe), and counts its outcome: a panic as errPanic
// before it goes on, neither answer nor error as portico.ErrNilResponse,
// and any outcome as the caller's when its OnChunk failed.
func (b *Breaker) call(ctx context.Context, req *portico.Request, next portico.Model, word uint64, start time.Duration) (*portico.Response, error) {
	req, s := guardStream(req)
	done := false
	defer func() {
		if !done { // a panic: count it unless the caller's OnChunk raised it; let it go on
			b.ended(ctx, word, start, s.counted(errPanic))
		}
	}()
	resp, err := portico.Answer(next.Generate(ctx, req))
	done = true
	b.ended(ctx, word, start, s.counted(err))
	return resp, err
}

// errPanic stands for a panic in the wrapped Model when counting outcomes.
var errPanic = &portico.Error{Class: portico.Transient, Reason: "panic"}

// ended counts the outcome err of a call started at start in state word.
func (b *Breaker) ended(ctx context.Context, word uint64, start time.Duration, err error) {
	switch {
	case State(word&3) == HalfOpen:
		b.probeOutcome(ctx, word>>2, start, err)
	case err == nil && b.time == nil && b.cfg.SlowCall == 0: // the common case: no clock, no verdict
		b.countSuccess(word)
	default:
		b.closedOutcome(ctx, word, start, err)
	}
}

// countSuccess counts a success of closed state word in the count-based
// window, unless its closed period is over: then it says nothing.
func (b *Breaker) countSuccess(word uint64) {
	if b.word.Load() == word {
		b.count.Add(false, false)
		b.endRun(word >> 2)
	}
}

// closedOutcome records a call that started in closed state word, by
// portico.FaultOf (its breaker column): the route's fault is a failure,
// an unanswered one a failure of the run of consecutive failures alone
// (not in the window, so the failure rate says only what the route
// answered); the caller's, the request's and local refusals are neither
// success nor failure, so one bad client cannot make a healthy route look
// down. A call whose closed period is over says nothing of the current one.
func (b *Breaker) closedOutcome(ctx context.Context, word uint64, start time.Duration, err error) {
	f, class := portico.FaultOf(err)
	if !counted(f) {
		return
	}
	now := mono.Now()
	if f == portico.FaultRoute { // the open state, if it comes, lasts at least as long
		b.announce(now, err)
	}
	if b.word.Load() != word {
		return // recording it could reset a bucket the current period is filling
	}
	gen := word >> 2
	slow := b.slow(start, now)
	if f != portico.FaultUnanswered {
		b.record(gen, now, f == portico.FaultRoute, slow)
	}
	c := Counts{Class: class}
	if f == portico.FaultNone {
		b.endRun(gen)
		if !slow {
			return // a fast success never trips
		}
	} else {
		c.ConsecutiveFailures = b.incConsec(gen)
	}
	b.judge(ctx, gen, now, c)
}

// counted reports whether the breaker counts an outcome of fault f at
// all (its column of portico.FaultOf): a success, the route's failure or
// an unanswered call.
func counted(f portico.Fault) bool {
	return f == portico.FaultNone || f == portico.FaultRoute || f == portico.FaultUnanswered
}

// slow reports whether a call started at start and ended at now was slow
// (Config.SlowCall).
func (b *Breaker) slow(start, now time.Duration) bool {
	return b.cfg.SlowCall > 0 && now-start >= b.cfg.SlowCall
}

// record enters a counted call of closed generation gen in the window.
func (b *Breaker) record(gen uint64, now time.Duration, failed, slow bool) {
	if b.time == nil {
		b.count.Add(failed, slow)
		return
	}
	d := window.Counts{1}
	if failed {
		d[1] = 1
	}
	if slow {
		d[2] = 1
	}
	b.time.Add(gen, now, d)
}

// judge asks Config.Trip about closed generation gen's window at now, c
// holding the last call's class and run, and trips when it says so.
func (b *Breaker) judge(ctx context.Context, gen uint64, now time.Duration, c Counts) {
	var w window.Counts
	if b.time != nil {
		w = b.time.Sum(gen, now)
	} else {
		w = b.count.Sum()
	}
	c.Calls, c.Failures, c.Slow = w[0], w[1], w[2]
	if reason := b.cfg.Trip(c); reason != "" {
		b.trip(ctx, gen, now, reason, c.Class)
	}
}

// endRun ends generation gen's run of consecutive failures.
func (b *Breaker) endRun(gen uint64) {
	if c := b.consec.Load(); c&0xffffffff != 0 {
		b.consec.CompareAndSwap(c, gen<<32)
	}
}

// incConsec adds a failure to generation gen's run and returns its length.
func (b *Breaker) incConsec(gen uint64) int {
	for {
		c := b.consec.Load()
		n := uint64(1)
		if c>>32 == gen&0xffffffff {
			n = c&0xffffffff + 1
		}
		if b.consec.CompareAndSwap(c, gen<<32|n) {
			return int(n)
		}
	}
}
