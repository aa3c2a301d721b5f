package breaker

import (
	"errors"
	"log/slog"
	"math"
	"time"
)

// Config configures a [Breaker]. The zero Config is a working breaker: a
// count-based window of the last 100 calls that trips at a 50% failure rate once
// 20 calls are in it, or after 5 consecutive failures; open for 30 s; then one
// probe, which closes it on success.
//
// The names follow resilience4j's CircuitBreakerConfig where they overlap
// (failure rate threshold, minimum number of calls, sliding window, slow calls,
// permitted calls in half-open state).
type Config struct {
	// Name names the route the breaker guards, in errors (Error.Model), events
	// (Event.Route), transitions and logs. Empty is allowed.
	Name string

	// FailureRate is the fraction of failed calls in the window, in (0, 1], at or
	// above which the breaker trips. Zero means 0.5.
	FailureRate float64
	// MinCalls is how many calls (counted, not ignored) the window must hold
	// before a rate (failure or slow) may trip the breaker. Zero means 20;
	// negative is an error. In a
	// count-based window it is capped at WindowCalls, the most the window
	// holds (as in resilience4j).
	MinCalls int
	// WindowCalls is the size of the count-based sliding window: the rates are
	// computed over the last WindowCalls counted calls. Zero means 100; negative
	// or 2^32 and above is an error. Ignored
	// when WindowDuration is set.
	WindowCalls int
	// WindowDuration, when positive, selects a time-based sliding window instead:
	// the rates are computed over the calls that ended in the last
	// WindowDuration, kept in WindowBuckets buckets (so the window slides in
	// steps of WindowDuration/WindowBuckets). Zero means count-based.
	WindowDuration time.Duration
	// WindowBuckets is the number of buckets of a time-based window. Zero means
	// 10; negative is an error, and so is a WindowDuration shorter than
	// WindowBuckets nanoseconds.
	WindowBuckets int
	// ConsecutiveFailures trips the breaker after this many failures in a row,
	// whatever the window says. Zero means 5; negative disables the rule.
	ConsecutiveFailures int

	// SlowCall, when positive, makes a call that takes at least this long a slow
	// call, whether it succeeded or not (resilience4j's slowCallDurationThreshold).
	// Zero disables slow-call detection, and the closed state then reads no clock
	// unless the window is time-based.
	SlowCall time.Duration
	// SlowCallRate is the fraction of slow calls in the window, in (0, 1], at or
	// above which the breaker trips. Zero means 1 (every call slow), as in
	// resilience4j. Used only when SlowCall is set.
	SlowCallRate float64

	// OpenFor is how long the breaker stays open after tripping before it admits
	// probes. Zero means 30 s.
	OpenFor time.Duration
	// OpenBackoff multiplies the open interval on each repeated trip (a probe
	// failing again) until the breaker closes: the n-th consecutive trip stays
	// open OpenFor * OpenBackoff^(n-1), capped at MaxOpenFor. Zero or one means a
	// constant interval; values below one are an error.
	OpenBackoff float64
	// MaxOpenFor caps the grown open interval. Zero means 10 * OpenFor.
	MaxOpenFor time.Duration

	// Probes is how many calls the half-open state lets through at the same time;
	// the others are rejected like in the open state. Zero means 1 (seed 000: let
	// ONE call through). A probe holds its slot until it returns, even into a
	// later half-open period, so that no more than Probes ever run at once: give
	// calls a deadline, or a probe that hangs keeps the breaker from closing.
	Probes int
	// CloseAfter is how many successful probes close the breaker. Zero means
	// Probes. A failed (or slow) probe reopens it at once.
	CloseAfter int

	// OnStateChange, when non-nil, is called after every state change,
	// synchronously on the goroutine of the call that caused it and never under
	// the breaker's lock: it may call [Breaker.State] or even the breaker
	// itself. Two transitions caused by concurrent calls may reach it
	// concurrently; Transition.Generation orders them.
	OnStateChange func(Transition)
	// Logger receives one record per state change (Warn when opening, Info for
	// half-open and closed). Nil discards.
	Logger *slog.Logger
}

// config is a Config with its defaults filled in.
type config struct {
	Config
	consecutive int // 0: disabled
}

func (c Config) normalize() (config, error) {
	n := config{Config: c}
	if c.FailureRate == 0 {
		n.FailureRate = 0.5
	}
	if c.MinCalls == 0 {
		n.MinCalls = 20
	}
	if c.WindowCalls == 0 {
		n.WindowCalls = 100
	}
	if c.WindowBuckets == 0 {
		n.WindowBuckets = 10
	}
	switch {
	case c.ConsecutiveFailures == 0:
		n.consecutive = 5
	case c.ConsecutiveFailures > 0:
		n.consecutive = c.ConsecutiveFailures
	}
	if c.SlowCallRate == 0 {
		n.SlowCallRate = 1
	}
	if c.OpenFor == 0 {
		n.OpenFor = 30 * time.Second
	}
	if c.OpenBackoff == 0 {
		n.OpenBackoff = 1
	}
	if c.MaxOpenFor == 0 {
		n.MaxOpenFor = 10 * n.OpenFor
		if n.OpenFor > math.MaxInt64/10 {
			n.MaxOpenFor = math.MaxInt64 // 10 * OpenFor would overflow
		}
	}
	if c.Probes == 0 {
		n.Probes = 1
	}
	if c.CloseAfter == 0 {
		n.CloseAfter = n.Probes
	}
	switch {
	case !(n.FailureRate > 0 && n.FailureRate <= 1):
		return n, errors.New("breaker: FailureRate must be in (0, 1]")
	case !(n.SlowCallRate > 0 && n.SlowCallRate <= 1):
		return n, errors.New("breaker: SlowCallRate must be in (0, 1]")
	case n.MinCalls < 0:
		return n, errors.New("breaker: MinCalls must not be negative")
	case n.WindowCalls < 0 || n.WindowCalls > math.MaxUint32:
		return n, errors.New("breaker: WindowCalls must be in [0, 2^32)")
	case n.WindowDuration < 0:
		return n, errors.New("breaker: WindowDuration must not be negative")
	case n.WindowBuckets < 0:
		return n, errors.New("breaker: WindowBuckets must not be negative")
	case n.WindowDuration > 0 && n.WindowDuration < time.Duration(n.WindowBuckets):
		return n, errors.New("breaker: WindowDuration must be at least WindowBuckets nanoseconds")
	case n.SlowCall < 0:
		return n, errors.New("breaker: SlowCall must not be negative")
	case n.OpenFor < 0 || n.MaxOpenFor < 0:
		return n, errors.New("breaker: OpenFor and MaxOpenFor must not be negative")
	case n.MaxOpenFor < n.OpenFor:
		return n, errors.New("breaker: MaxOpenFor must be at least OpenFor")
	case !(n.OpenBackoff >= 1) || math.IsInf(n.OpenBackoff, 0):
		return n, errors.New("breaker: OpenBackoff must be at least 1 and finite")
	case n.Probes < 0 || n.CloseAfter < 0:
		return n, errors.New("breaker: Probes and CloseAfter must not be negative")
	}
	if n.WindowDuration == 0 && n.MinCalls > n.WindowCalls {
		// A count-based window never holds more than WindowCalls calls: as in
		// resilience4j, MinCalls is capped so the rate rule can still trip.
		n.MinCalls = n.WindowCalls
	}
	return n, nil
}

// openInterval returns how long the n-th consecutive trip (n >= 1) keeps the
// breaker open: OpenFor * OpenBackoff^(n-1), capped at MaxOpenFor.
func openInterval(c *config, n int) time.Duration {
	d := float64(c.OpenFor) * math.Pow(c.OpenBackoff, float64(n-1))
	if d >= float64(c.MaxOpenFor) || math.IsInf(d, 0) || math.IsNaN(d) {
		return c.MaxOpenFor
	}
	return time.Duration(d)
}
