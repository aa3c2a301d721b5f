package fallback

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/rules"
	"github.com/portico-llm/portico/rank"
)

// Independence says how a group's fallbacks must differ from its primary so
// that they fail independently: a fallback behind the same provider or
// region often fails with the primary. The primary is the first of Config.Routes, even when it is
// skipped (an open breaker is exactly when independence matters); with a
// Config.Policy, it is the first candidate in the Policy's order.
type Independence uint8

// The independence requirements.
const (
	// AnyRoute: no requirement.
	AnyRoute Independence = iota
	// OtherProvider: a fallback must not share the primary's
	// Capabilities.Provider.
	OtherProvider
	// OtherRegion: a fallback must differ from the primary in Provider or in
	// Region: another region of the same provider is acceptable.
	OtherRegion
)

// String returns "any", "other_provider" or "other_region".
func (i Independence) String() string { return enum.Name(independenceNames[:], i, "Independence") }

var independenceNames = [...]string{AnyRoute: "any", OtherProvider: "other_provider", OtherRegion: "other_region"}

// Defaults of the deadline split, after an example of an 8 s deadline: 300 ms
// kept for the gateway and validation, 4.5 s for the primary (9/16 of 8 s),
// and the remaining 3.2 s for the fallback. DefaultReserve is the most
// the default reserve keeps: on a shorter deadline it keeps 1/16 of it (see
// Config.Reserve).
const (
	DefaultShare      = 0.5625
	DefaultReserve    = 300 * time.Millisecond
	DefaultMinAttempt = 100 * time.Millisecond
	// DefaultMaxCooldown bounds a route's cooldown from one Retry-After
	// (Config.MaxCooldown), as breaker.MaxRetryAfterHold bounds how long
	// one holds a breaker open.
	DefaultMaxCooldown = 5 * time.Minute
	// DefaultFaultAfter is the least allowance whose cut counts against a
	// route (Config.FaultAfter): well above a healthy provider's time to
	// first token, well below the 67.5 s a 2-minute deadline's first share
	// gives a hung primary.
	DefaultFaultAfter = 10 * time.Second
	// DefaultContinuations bounds the breaks a request's stream is
	// continued past: a route that breaks twice in one answer is seldom
	// cured by a third try, and each continuation bills the prefix again.
	DefaultContinuations = 2
)

// DefaultWaitInPlace is the longest Retry-After a candidate waits for in
// place when another could serve the request (Config.WaitInPlace): 500 ms,
// the retry layer's first backoff ceiling (retry.DefaultBaseDelay, as the
// OpenAI and Anthropic SDKs' initial retry delay), about what moving costs:
// a connection and TLS handshake to another provider (two or three round
// trips) and a prompt cache that is cold there. A hint that short is waited
// as a backoff would be; a longer one is worth a switch.
const DefaultWaitInPlace = 500 * time.Millisecond

// reserveDivisor scales the default reserve: min(DefaultReserve,
// remaining/reserveDivisor). 16 keeps the example's 300 ms for every deadline of
// 4.8 s or more (its 8 s: 500 ms > 300 ms), and below that gives the layers
// outside the group 1/16 of the time, the candidates 15/16.
const reserveDivisor = 16

// Config configures a [Group]. Only Routes is required; every other zero field
// means its default.
type Config struct {
	// Routes are the group's routes in order of preference: the first is the
	// primary. Each needs a unique, non-empty Name and a non-nil Model. A route's
	// Model is usually its own stack (rate limit, breaker, retry, validate); set
	// its Health to its breaker so the group skips it while open.
	Routes []portico.Route
	// Estimator estimates the request's input tokens for the context-window and
	// cost filters; it runs at most once per request: without a Policy only
	// when a route looked at declares a ContextWindow or the Contract a
	// MaxCost, with a Policy always (for Candidate.EstimatedCost). Nil means
	// [portico.DefaultEstimator].
	Estimator portico.Estimator
	// Independence requires fallbacks to fail independently of the primary. Zero
	// means AnyRoute. An empty Provider or Region is unknown and excludes nothing.
	Independence Independence
	// Policy, when non-nil, orders each request's candidates by score,
	// lowest first ([rank.Order]), over what the group learnt from its calls
	// to each route (a [rank.Table]: one Start and one Done per call, no
	// lock). Nil means the order of Routes, filtered lazily: a route is
	// looked at only when the ones before it have failed, so a first-route
	// success costs one filter check (under a deadline, also the checks that
	// find whether another candidate follows, which sizes its share).
	Policy rank.Policy
	// Weights are static preferences per route, same length as Routes,
	// each > 0 and finite; nil means 1 for every route. The built-in
	// policies divide their score by the route's weight; with Policy nil,
	// Weights make it [rank.Split]: a weighted random split, so weights
	// 7:3 put 70% and 30% of the requests first on each route, and a
	// fallback or a hedge goes to the next route in the same proportions.
	Weights []float64
	// Headroom, when non-nil, returns what is left of route i's rate
	// limits for req, in [0, 1] (ratelimit's Limiter.Headroom; package
	// stack sets it to each route's limiter): the group sets each
	// candidate's [rank.Candidate].Spent to 1 minus it, which [rank.Split]
	// weighs by, so a weighted split moves traffic off a route whose
	// provider reports its limits nearly used, before it answers 429. Nil
	// means Spent 0. It must be fast, never block, and be safe for
	// concurrent use.
	Headroom func(i int, req *portico.Request) float64
	// Hedge, when non-nil, hedges a request that has not answered after the
	// Hedger's delay to the next candidate that passes the filter, as
	// [hedge.Hedger.Run] races attempts: the first answer wins and the others
	// are canceled (see the package documentation, Hedging). Each route's
	// latency is learnt by the group; a streamed request that sets
	// ContinueOnBreak is not hedged. Nil means no hedging: candidates are
	// tried one after the other.
	Hedge *hedge.Hedger

	// Share is the fraction of the remaining time a candidate may use when
	// another candidate could follow it, in (0, 1]; for a stream, the
	// longest gap between its signs of progress (a chunk, or
	// [portico.Progress]) from the call's start, the stream running on to
	// the end of the time before the reserve while none is longer.
	// Zero means DefaultShare (9/16: 4.5 s of 8 s). The last candidate gets
	// all the remaining time but Reserve. Applies only when the context has
	// a deadline.
	Share float64
	// Reserve is the time kept back at the end of the deadline for the layers
	// outside the group (gateway, validation): no candidate's allowance reaches
	// into it. Zero means a reserve that scales with the deadline: the smaller
	// of DefaultReserve (300 ms) and 1/16 of the time remaining when the
	// request enters the group, so the 300 ms of an 8 s deadline holds for any
	// deadline of 4.8 s or more, while a 500 ms deadline keeps 31.25 ms back
	// instead of leaving a fallback no time. Positive is a fixed reserve;
	// negative means none.
	Reserve time.Duration
	// MinAttempt is the least time worth starting a fallback with: a
	// candidate after a call, or a hedge, whose allowance is shorter is not
	// started (compare the remaining time with the attempt's allowances);
	// the first call, when its allowance is shorter, takes all the time the
	// caller's deadline leaves. Zero means DefaultMinAttempt (100 ms);
	// negative means none.
	MinAttempt time.Duration

	// MaxCooldown bounds the cooldown one Retry-After gives a route: a hint
	// of hours (a misconfigured proxy, a daily quota's reset) keeps the route
	// out for MaxCooldown, then a call asks again, and with a shared
	// Cooldowns one instance's answer cannot switch a route off for the
	// whole fleet for a day. Zero means [DefaultMaxCooldown] (5 min);
	// negative is an error.
	MaxCooldown time.Duration
	// FaultAfter is the least allowance whose end is a failure of the route:
	// a candidate cut at the end of its share, or of the last candidate's
	// time before the reserve, after running at least FaultAfter is a fault
	// its breaker counts ([ErrShareTimeout]). A cut sooner also matches
	// [portico.ErrDeadlineCut], or is an unanswered cut
	// ([portico.ErrUnanswered]) when another candidate followed (see The
	// deadline is split in the package documentation). Zero means
	// [DefaultFaultAfter] (10 s); negative means every cut is a failure.
	FaultAfter time.Duration

	// Continuations is the most breaks one request's stream is continued
	// past, for requests that set ContinueOnBreak (see Continuation in the
	// package documentation). Zero means [DefaultContinuations] (2);
	// negative is an error.
	Continuations int
	// WaitInPlace is the longest Retry-After a candidate waits for in place
	// when another candidate could serve the request after it: the group
	// tells the route's retry layer ([portico.ContextWithMaxWait]), which
	// ends the call at once on a longer hint, and the group moves on. Like
	// the split, it applies when the context has a deadline: the group then
	// derives a context per candidate. Zero means DefaultWaitInPlace
	// (500 ms); negative means none (each route waits as it would alone).
	WaitInPlace time.Duration
	// Cooldowns keeps when each route may be called again after it
	// announced a Retry-After: until then the group skips it (hop reason
	// "cooldown"), and every route of the same Capabilities.Quota too. Nil
	// means a [MemoryCooldowns] of the group's own; share one (or a store
	// shared between processes) to share cooldowns.
	Cooldowns portico.Cooldowns
	// StopOnUnusable makes the group stop at a route's [portico.Unusable]
	// failure (401 or 403, 404, a quota exhausted) and return it, as at a
	// Permanent one, instead of moving on to the next route: for a service
	// that would rather fail than be served by another route while one's
	// credentials or model are wrong. The route's breaker still counts it.
	StopOnUnusable bool

	// Logger receives a record per route left (Info). Nil discards.
	Logger *slog.Logger
}

func (c Config) normalize() (Config, error) {
	if err := cmp.Or(checkRoutes(c.Routes), checkWeights(c.Weights, len(c.Routes)), rules.First(
		rules.If(!(c.Share >= 0 && c.Share <= 1), fmt.Sprintf("fallback: Config.Share %v is outside (0, 1]", c.Share)),
		rules.If(c.MaxCooldown < 0, "fallback: negative Config.MaxCooldown ("+c.MaxCooldown.String()+")"),
		rules.If(c.Continuations < 0, "fallback: negative Config.Continuations ("+strconv.Itoa(c.Continuations)+")"),
		rules.If(c.Independence > OtherRegion, "fallback: unknown Config.Independence "+c.Independence.String()),
	)); err != nil {
		return c, err
	}
	c.Routes = slices.Clone(c.Routes)
	if c.Policy == nil && c.Weights != nil {
		c.Policy = rank.Split
	}
	c.Estimator = cmp.Or(c.Estimator, portico.DefaultEstimator)
	c.Share = cmp.Or(c.Share, DefaultShare)
	c.Reserve = orDefault(c.Reserve, DefaultReserve, 0)
	c.WaitInPlace = orDefault(c.WaitInPlace, DefaultWaitInPlace, -1)
	c.MinAttempt = orDefault(c.MinAttempt, DefaultMinAttempt, 0)
	c.FaultAfter = orDefault(c.FaultAfter, DefaultFaultAfter, 0)
	c.MaxCooldown = orDefault(c.MaxCooldown, DefaultMaxCooldown, 0)
	c.Continuations = cmp.Or(c.Continuations, DefaultContinuations)
	return c, nil
}

// checkWeights returns the error of Weights w for n routes: not one per
// route, or one not > 0 and finite.
func checkWeights(w []float64, n int) error {
	if w == nil {
		return nil
	}
	if len(w) != n {
		return fmt.Errorf("fallback: Config.Weights has %d entries for %d routes", len(w), n)
	}
	for i, x := range w {
		if !(x > 0 && x <= math.MaxFloat64) {
			return fmt.Errorf("fallback: Config.Weights[%d] = %v, want > 0 and finite", i, x)
		}
	}
	return nil
}

// checkRoutes returns the error of a Config whose Routes are empty, or one
// of them has no Name, a nil Model, a Name another has, or invalid
// Capabilities.
func checkRoutes(routes []portico.Route) error {
	if len(routes) == 0 {
		return errors.New("fallback: Config.Routes is empty")
	}
	seen := make(map[string]bool, len(routes))
	for i, r := range routes {
		if err := rules.First(
			rules.If(r.Name == "", "fallback: route "+strconv.Itoa(i)+" has no Name"),
			rules.If(portico.IsNil(r.Model), "fallback: route "+r.Name+" has a nil Model"),
			rules.If(seen[r.Name], "fallback: route name "+r.Name+" is not unique"),
		); err != nil {
			return err
		}
		if err := r.Capabilities.Validate(); err != nil {
			return fmt.Errorf("fallback: route %s: %w", r.Name, err)
		}
		seen[r.Name] = true
	}
	return nil
}

// Validate returns the error [New] would return for c, or nil: a caller that
// holds a Config it may not build (package stack, with a single route) still
// refuses the values that can only be a mistake.
func (c Config) Validate() error {
	_, err := c.normalize()
	return err
}

// orDefault is a Config duration normalized: def when d is zero, none when
// it is negative, d otherwise.
func orDefault(d, def, none time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return none
	}
	return d
}
