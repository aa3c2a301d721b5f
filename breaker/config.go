package breaker

import (
	"cmp"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/rules"
)

// Config configures a [Breaker]. The zero Config is a working breaker: a
// count-based window of the last 100 calls, tripped by [DefaultTrip] (an
// Unusable failure, 5 consecutive failures, or a 50% failure rate once 20
// calls are in the window); open for 30 s, or until the end of a Retry-After
// the route announced when later; then one probe, which closes it on success.
type Config struct {
	// Name names the route the breaker guards, in errors (Error.Model), events
	// (Event.Route), transitions and logs. Empty is allowed.
	Name string
	// Window is the sliding window the rates are computed over; the zero
	// value is the last 100 calls.
	Window Window
	// Trip decides, from the window's [Counts], when the closed breaker trips.
	// Nil means [DefaultTrip]. It is called after each counted failure or slow
	// call (never after a fast success), on that call's goroutine, concurrently
	// and never under a lock: it must be fast and pure. New refuses a rule
	// that would not trip even on a full window of failed (and slow) calls.
	Trip TripRule
	// SlowCall, when positive, makes a call that takes at least this long a
	// slow call, whether it succeeded or not (resilience4j's
	// slowCallDurationThreshold): counted in Counts.Slow, and a slow probe
	// reopens the breaker. Zero disables slow-call detection, and a success
	// in the closed state then reads no clock unless the window is
	// time-based. Negative is an error.
	SlowCall time.Duration
	// OpenFor is how long the breaker stays open after tripping before it
	// admits probes, at least: never less than until the end of the latest
	// Retry-After of a counted failure. Zero means 30 s; negative is an error.
	OpenFor time.Duration
	// Probes is how many calls the half-open state lets through at the same
	// time, and how many must succeed to close the breaker; the others are
	// rejected like in the open state. Zero means 1 (the SRE book's "let one
	// request through"); negative is an error. A probe holds its slot until it
	// returns, even into a later half-open period, so that no more than Probes
	// ever run at once: give calls a deadline, or a hung probe keeps the
	// breaker from closing.
	Probes int

	// Shared, when non-nil, shares the open state with every breaker of
	// the same Name over the store (other processes', through package
	// redisstore's Cooldowns): opening publishes the interval's end under
	// "breaker:" + Name, and while one published by another is ahead, this
	// breaker, closed, rejects calls as if open, State is Open and
	// Available is false.
	// Its window, trips and probes stay its own. Name must be set.
	Shared portico.Cooldowns

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

// Window is the breaker's sliding window. The zero Window holds the last 100
// calls.
type Window struct {
	// Calls is the size of a count-based window: the last Calls counted calls.
	// Zero means 100; negative or 2^32 and above is an error. Ignored when
	// Duration is set.
	Calls int
	// Duration, when positive, selects a time-based window instead: the calls
	// that ended in the last Duration, kept in 10 buckets (so the window
	// slides in steps of Duration/10). Zero means count-based; negative, or
	// below 10 ns, is an error.
	Duration time.Duration
}

// timeBuckets is the number of buckets of a time-based window.
const timeBuckets = 10

// normalize returns c with its defaults filled in, or the error New returns.
func (c Config) normalize() (Config, error) {
	n := c.withDefaults()
	if err := n.check(); err != nil {
		return n, err
	}
	if !n.trips() {
		return n, errors.New("breaker: Config.Trip does not trip even on a full window of failed calls")
	}
	return n, nil
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.Window.Calls = cmp.Or(c.Window.Calls, 100)
	if c.Trip == nil {
		c.Trip = DefaultTrip
	}
	c.OpenFor, c.Probes = cmp.Or(c.OpenFor, 30*time.Second), cmp.Or(c.Probes, 1)
	return c
}

// check returns the error of the first field of c out of range.
func (c *Config) check() error {
	d := c.Window.Duration
	return rules.First(
		rules.If(c.Window.Calls < 0 || c.Window.Calls > math.MaxUint32, "breaker: Config.Window.Calls "+strconv.Itoa(c.Window.Calls)+" is outside [0, 2^32)"),
		rules.If(d < 0, "breaker: Config.Window.Duration "+d.String()+" is negative"),
		rules.If(d > 0 && d < timeBuckets, "breaker: Config.Window.Duration "+d.String()+" is below 10ns, one per bucket"),
		rules.If(c.SlowCall < 0, "breaker: Config.SlowCall "+c.SlowCall.String()+" is negative"),
		rules.If(c.OpenFor < 0, "breaker: Config.OpenFor "+c.OpenFor.String()+" is negative"),
		rules.If(c.Probes < 0, "breaker: Config.Probes "+strconv.Itoa(c.Probes)+" is negative"),
		rules.If(c.Shared != nil && c.Name == "", "breaker: Config.Shared without a Config.Name to share the state under"),
	)
}

// trips reports whether c.Trip trips on the worst window, failed with one of
// the classes a breaker counts as failures.
func (c *Config) trips() bool {
	w := c.worst()
	for _, k := range [...]portico.Class{portico.Transient, portico.RateLimited, portico.Ambiguous, portico.InvalidResponse, portico.Unusable} {
		if w.Class = k; c.Trip(w) != "" {
			return true
		}
	}
	return false
}

// worst returns the Counts of the worst window c's breaker can hold: every
// call failed (and was slow, when slow calls are detected), the window full
// (a time-based window has no fixed size: a large one stands for it), and a
// run of consecutive failures as long as it gets.
func (c *Config) worst() Counts {
	n := c.Window.Calls
	if c.Window.Duration > 0 {
		n = math.MaxInt32
	}
	w := Counts{Calls: n, Failures: n, ConsecutiveFailures: math.MaxInt32}
	if c.SlowCall > 0 {
		w.Slow = n
	}
	return w
}

// Store is the store of Config.Shared, under its old name.
//
// Deprecated: use [portico.Cooldowns], the same interface.
type Store = portico.Cooldowns
