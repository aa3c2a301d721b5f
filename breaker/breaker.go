package breaker

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
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
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

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
	// openUntil is when the open state ends, in nanoseconds since base.
	openUntil atomic.Int64
	// announced is the latest end of a Retry-After a counted failure carried,
	// in nanoseconds since base: the open state never ends before it.
	announced atomic.Int64
	// probes is the number of half-open probes in flight (written under mu).
	probes atomic.Int32

	cfg  Config    // with defaults
	base time.Time // monotonic origin of the nanos clock

	needStart, needEnd bool // which clock reads the closed path makes
	entry              bool // needStart, or shared: the closed path has work before the call

	shared    Store  // Config.Shared, or nil
	sharedKey string // "breaker:" + Config.Name

	ring  *countRing // count-based window, or
	tring *timeRing  // time-based window
	// consec is gen<<32 | consecutive failures in closed generation gen.
	consec atomic.Uint64

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
	b := &Breaker{cfg: c, base: time.Now()}
	if c.Window.Duration > 0 {
		b.tring = newTimeRing(int64(c.Window.Duration), timeBuckets)
	} else {
		b.ring = newCountRing(c.Window.Calls)
	}
	if c.Shared != nil {
		b.shared, b.sharedKey = c.Shared, "breaker:"+c.Name
	}
	b.needStart = c.SlowCall > 0
	b.needEnd = b.needStart || b.tring != nil
	b.entry = b.needStart || b.shared != nil
	return b, nil
}

// MustNew is like [New] but panics on a configuration error.
func MustNew(cfg Config) *Breaker {
	b, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

// nanos reads the clock once: monotonic nanoseconds since the breaker was made.
func (b *Breaker) nanos() int64 { return int64(time.Since(b.base)) }

// State returns the current state. It is one atomic load. An Open breaker whose
// interval has ended stays Open until the next call moves it to HalfOpen;
// [Breaker.Available] tells whether that call would be let through.
func (b *Breaker) State() State { return State(b.word.Load() & 3) }

// Available implements [portico.Health]: it reports whether a call made now
// would be attempted rather than rejected at once. Closed: true, unless a
// breaker sharing its state is open (Config.Shared); Open: whether
// the open interval has ended (a probe is due); HalfOpen: whether a probe slot
// is free. It never blocks; in the closed state it is one atomic load.
func (b *Breaker) Available() bool {
	switch State(b.word.Load() & 3) {
	case Closed:
		return b.shared == nil || b.openElsewhere() == 0
	case Open:
		return b.nanos() >= b.openUntil.Load()
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
		return max(0, time.Duration(b.openUntil.Load()-b.nanos()))
	case Closed:
		if b.shared != nil {
			return b.openElsewhere()
		}
	}
	return 0
}

// openElsewhere returns the time left of the open interval published under
// the breaker's key in Config.Shared, 0 when none is ahead. It reads the
// clock only when the store holds one.
func (b *Breaker) openElsewhere() time.Duration {
	u := b.shared.Until(b.sharedKey)
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

// announce raises b.announced to until (nanoseconds since base).
func (b *Breaker) announce(until int64) {
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
	if portico.IsNil(next) {
		panic("breaker: Wrap of a nil Model")
	}
	return &guarded{b: b, next: next}
}

type guarded struct {
	b    *Breaker
	next portico.Model
}

// Generate implements portico.Model.
func (g *guarded) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if req == nil {
		return nil, portico.ErrNilRequest
	}
	if err := portico.Gone(ctx); err != nil {
		return nil, err // the caller has gone: no probe slot taken, nothing counted
	}
	b := g.b
	word := b.word.Load()
	if State(word&3) != Closed {
		return b.notClosed(ctx, req, g.next, word)
	}
	var start int64
	if b.entry { // one branch while neither is configured
		if b.shared != nil {
			if left := b.openElsewhere(); left > 0 {
				return nil, b.rejected(left, "breaker open elsewhere")
			}
		}
		if b.needStart && req.OnChunk == nil {
			start = b.nanos()
		}
	}
	if req.OnChunk != nil { // streaming: the caller's OnChunk is guarded
		return b.closedCall(ctx, req, g.next, word)
	}
	// closedCall inlined by hand: a function with a defer is never inlined, and
	// the extra call is a third of the closed path's cost.
	done := false
	defer func() {
		if !done { // next panicked: count a failure, let the panic go on
			b.closedOutcome(ctx, word, start, errPanic)
		}
	}()
	resp, err := g.next.Generate(ctx, req)
	done = true
	if err == nil && resp == nil { // next broke the Model contract: a route fault
		err = portico.ErrNilResponse
	}
	if err == nil && !b.needEnd {
		if b.word.Load() == word { // else its closed period is over: say nothing
			b.ring.success()
			if c := b.consec.Load(); c&0xffffffff != 0 {
				b.consec.CompareAndSwap(c, word>>2<<32)
			}
		}
		return resp, nil
	}
	b.closedOutcome(ctx, word, start, err)
	return resp, err
}

// closedCall is a call in closed state word, as Generate makes it inline: no
// lock, no allocation unless the request streams (see guardStream), no clock
// read unless the window is time-based or slow calls are detected.
func (b *Breaker) closedCall(ctx context.Context, req *portico.Request, next portico.Model, word uint64) (*portico.Response, error) {
	var start int64
	if b.needStart {
		start = b.nanos()
	}
	req, s := guardStream(req)
	done := false
	defer func() {
		if !done { // a panic: count a failure unless the caller's OnChunk raised it; let it go on
			b.closedOutcome(ctx, word, start, s.counted(errPanic))
		}
	}()
	resp, err := next.Generate(ctx, req)
	done = true
	if err == nil && resp == nil { // next broke the Model contract: a route fault
		err = portico.ErrNilResponse
	}
	if s != nil {
		b.closedOutcome(ctx, word, start, s.counted(err))
		return resp, err
	}
	if err == nil && !b.needEnd { // the common case, without a call
		if b.word.Load() == word {
			b.ring.success()
			if c := b.consec.Load(); c&0xffffffff != 0 {
				b.consec.CompareAndSwap(c, word>>2<<32)
			}
		}
		return resp, nil
	}
	b.closedOutcome(ctx, word, start, err)
	return resp, err
}

// errPanic stands for a panic in the wrapped Model when counting outcomes.
var errPanic = &portico.Error{Class: portico.Transient, Reason: "panic"}

// outcome reads portico.FaultOf's breaker column for a call that ended
// with err: counted reports whether it counts at all, failed whether as a
// failure, and runOnly whether as a failure of the run of consecutive
// failures alone (an unanswered failure, not in the window). Only the
// route's faults count as failures; the caller's, the request's and local
// refusals are neither success nor failure, so one bad client cannot make
// a healthy route look down.
func outcome(err error) (class portico.Class, counted, failed, runOnly bool) {
	f, class := portico.FaultOf(err)
	switch f {
	case portico.FaultNone:
		return class, true, false, false
	case portico.FaultRoute:
		return class, true, true, false
	case portico.FaultUnanswered:
		return class, true, true, true
	}
	return class, false, false, false
}

// closedOutcome records a call that started in closed state word.
func (b *Breaker) closedOutcome(ctx context.Context, word uint64, start int64, err error) {
	class, counted, failed, runOnly := outcome(err)
	if !counted {
		return
	}
	if runOnly {
		b.unanswered(ctx, word, class)
		return
	}
	var now int64
	var ra time.Duration
	if failed {
		ra = portico.RetryAfterOf(err)
	}
	if b.needEnd || ra > 0 {
		now = b.nanos()
	}
	if ra > 0 { // the open state, if it comes, lasts at least as long
		b.announce(now + int64(min(ra, MaxRetryAfterHold)))
	}
	gen := word >> 2
	slow := b.needStart && now-start >= int64(b.cfg.SlowCall)
	if b.word.Load() != word {
		// The closed period this call started in is over: its outcome says
		// nothing about the current one, and recording it could reset a
		// bucket the current period is filling.
		return
	}
	if !failed && !slow {
		if b.tring != nil {
			b.tring.record(gen, now, 0)
		} else {
			b.ring.success()
		}
		if c := b.consec.Load(); c&0xffffffff != 0 {
			b.consec.CompareAndSwap(c, gen<<32)
		}
		return
	}
	var flags uint64
	if failed {
		flags |= flagFailed
	}
	if slow {
		flags |= flagSlow
	}
	if b.tring != nil {
		b.tring.record(gen, now, flags)
	} else {
		b.ring.record(flags)
	}
	counts := Counts{Class: class}
	if failed {
		counts.ConsecutiveFailures = b.incConsec(gen)
	} else if c := b.consec.Load(); c&0xffffffff != 0 {
		b.consec.CompareAndSwap(c, gen<<32)
	}
	t := b.window(gen, now)
	counts.Calls, counts.Failures, counts.Slow = t.calls, t.failed, t.slow
	reason := b.cfg.Trip(counts)
	if reason == "" {
		return
	}
	if !b.needEnd && ra <= 0 {
		now = b.nanos()
	}
	b.trip(ctx, gen, now, reason, class)
}

// window tallies the closed period gen's window: the time window's at now
// when the breaker has one, the count window's otherwise.
func (b *Breaker) window(gen uint64, now int64) tally {
	if b.tring != nil {
		return b.tring.tally(gen, now)
	}
	return b.ring.tally()
}

// unanswered records an unanswered failure (portico.IsUnanswered) of class
// class in the closed period of state word: it lengthens the run of
// consecutive failures, which Config.Trip reads, but enters neither the
// window's calls nor its failures, so a route's failure rate says only
// what it answered, and any answer ends the run.
func (b *Breaker) unanswered(ctx context.Context, word uint64, class portico.Class) {
	if b.word.Load() != word {
		return // its closed period is over, as in closedOutcome
	}
	gen, now := word>>2, b.nanos() // unanswered cuts are rare: one clock read
	counts := Counts{Class: class, ConsecutiveFailures: b.incConsec(gen)}
	t := b.window(gen, now)
	counts.Calls, counts.Failures, counts.Slow = t.calls, t.failed, t.slow
	if reason := b.cfg.Trip(counts); reason != "" {
		b.trip(ctx, gen, now, reason, class)
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
