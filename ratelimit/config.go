package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/rules"
)

// Mode says what a [Limiter] does with a call its buckets cannot admit now.
type Mode uint8

// The modes.
const (
	// Reject refuses the call at once with a [portico.RateLimited] error whose
	// RetryAfter is the exact wait after which the same call would be admitted.
	Reject Mode = iota
	// Wait makes the call wait for its turn when the wait fits both the
	// context's remaining deadline and [Config.MaxWait]; otherwise it is
	// refused as in Reject, at once. A hedge (portico.Request.Hedge) is
	// refused at once too: it takes spare capacity only.
	Wait
)

// String returns "reject" or "wait".
func (m Mode) String() string { return enum.Name(modeNames[:], m, "Mode") }

var modeNames = [...]string{Reject: "reject", Wait: "wait"}

// Order is the discipline of the waiting queue in front of the in-flight cap:
// who goes first.
type Order uint8

// The queue orders.
const (
	// FCFSCall serves waiting calls in their order of arrival (vLLM's default).
	FCFSCall Order = iota
	// FCFSProgram serves the calls of the program that arrived first
	// (Continuum): programs are told apart by Identity.SessionID, and a program
	// arrives with its first call the limiter sees. A call without a SessionID
	// is a program of its own.
	FCFSProgram
	// PLAS serves the program with the least attained service first (Autellix's
	// program-level attained service): the sum of the service times (grant of a
	// slot to completion) of the program's calls so far, bucketed into discrete
	// priority levels (see [PLASConfig]), first come first served within a
	// level, with a starvation guard. A call without a SessionID has attained
	// nothing and goes first.
	PLAS
	// ATLAS is PLAS over a program's critical path (Autellix's adaptive
	// thread-level attained service), for programs whose calls run in
	// parallel: a call's path is the program's longest path when its slot
	// was granted (the calls that had ended by then are its parents) plus
	// its own service time, and the program keeps its longest path, which
	// its next calls inherit. A program of calls one after the other has
	// the same priority as under PLAS; one that fans out four calls of 10
	// ms has attained 10 ms, not 40. Levels, starvation guard and
	// PLASConfig are PLAS's.
	ATLAS
)

// String returns "fcfs_call", "fcfs_program", "plas" or "atlas".
func (o Order) String() string { return enum.Name(orderNames[:], o, "Order") }

var orderNames = [...]string{FCFSCall: "fcfs_call", FCFSProgram: "fcfs_program", PLAS: "plas", ATLAS: "atlas"}

// Limits are the limits a [Limiter] applies to each key. They are given in
// [Config] and can be changed live with [Limiter.SetLimit].
//
// At least one of Requests, Tokens and MaxInFlight must be positive, unless
// [Config.Concurrency] caps the calls in flight: there is no sensible
// default limit for an unknown provider, so a Limits that limits nothing is
// a configuration error rather than a silent pass-through.
type Limits struct {
	// Requests is the refill of the request bucket, in requests per Period per
	// key, with golang.org/x/time/rate's semantics. 0 means no request bucket.
	Requests int
	// RequestBurst is the request bucket's capacity, in requests. 0 means
	// Requests (a full period's worth).
	RequestBurst int
	// Tokens is the refill of the token bucket, in LLM tokens (input plus
	// output) per Period per key. 0 means no token bucket.
	Tokens int
	// TokenBurst is the token bucket's capacity b, in tokens: no call whose
	// N_in + N_max exceeds it can ever be admitted, and such a call is
	// refused at once with a [portico.Incompatible] error wrapping a
	// [*CapacityError] (a route with a larger bucket may serve it). An
	// estimate over it by a [portico.Scaled] Estimator's learned scale
	// alone reserves the whole bucket instead (see [Limiter.Wrap]). 0 means
	// Tokens.
	TokenBurst int
	// Period is the time Requests and Tokens refer to. 0 means one minute
	// (providers announce limits per minute: RPM, TPM).
	Period time.Duration
	// MaxInFlight is L_max, the most calls of one key in flight at once. 0
	// means no cap. Beyond it calls are shed at once with [ErrOverloaded]
	// (Google SRE book, "Handling Overload"), or wait in the queue when
	// Config.Queue.Size is positive.
	MaxInFlight int
}

// norm validates l and fills its defaults; adaptive says a [Concurrency]
// caps the calls in flight, so l may set no limit of its own.
func (l Limits) norm(adaptive bool) (Limits, error) {
	for _, f := range []struct {
		name     string
		negative bool
		v        any
	}{{"Requests", l.Requests < 0, l.Requests}, {"RequestBurst", l.RequestBurst < 0, l.RequestBurst}, {"Tokens", l.Tokens < 0, l.Tokens},
		{"TokenBurst", l.TokenBurst < 0, l.TokenBurst}, {"MaxInFlight", l.MaxInFlight < 0, l.MaxInFlight}, {"Period", l.Period < 0, l.Period}} {
		if f.negative {
			return l, fmt.Errorf("ratelimit: negative Limits.%s (%v)", f.name, f.v)
		}
	}
	if err := rules.First(
		rules.If(!l.buckets() && l.MaxInFlight == 0 && !adaptive,
			"ratelimit: no limit: set Limits.Requests, Tokens or MaxInFlight, or Config.Concurrency"),
		rules.If(burstAlone(l.RequestBurst, l.Requests), "ratelimit: Limits.RequestBurst without Requests"),
		rules.If(burstAlone(l.TokenBurst, l.Tokens), "ratelimit: Limits.TokenBurst without Tokens"),
	); err != nil {
		return l, err
	}
	l.Period = cmp.Or(l.Period, time.Minute)
	l.RequestBurst, l.TokenBurst = cmp.Or(l.RequestBurst, l.Requests), cmp.Or(l.TokenBurst, l.Tokens)
	return l, nil
}

// burstAlone reports whether a bucket's burst is set without its limit.
func burstAlone(burst, limit int) bool { return burst > 0 && limit == 0 }

// defaultTooLarge returns an error when a token bucket of l could admit no
// call reserving def output tokens: def fills the whole TokenBurst, leaving
// no room for the input. Else nil.
func defaultTooLarge(def int, l *Limits) error {
	if l.Tokens > 0 && def >= l.TokenBurst {
		return fmt.Errorf("ratelimit: Config.DefaultMaxTokens %d leaves no room for input in TokenBurst %d: no call with the default could ever be admitted", def, l.TokenBurst)
	}
	return nil
}

// buckets reports whether l has a request or a token bucket.
func (l *Limits) buckets() bool { return l.Requests > 0 || l.Tokens > 0 }

func (l *Limits) requestRate() float64 { return float64(l.Requests) / l.Period.Seconds() }
func (l *Limits) tokenRate() float64   { return float64(l.Tokens) / l.Period.Seconds() }

// PLASConfig tunes the [PLAS] order. The zero value means the defaults.
//
// Autellix discretizes the continuous priority (attained service) into K
// queues so that it does not degenerate into round robin, and promotes a call
// to the first queue when (w_prog + w_call) / (d_prog + d_call) >= β, with w
// the waits and d the service times of the program and the call.
type PLASConfig struct {
	// Quantum is the attained service that bounds the first level. Level i
	// holds programs whose attained service is in [Quantum*(2^i-1),
	// Quantum*(2^(i+1)-1)): the levels double in width. 0 means one second.
	Quantum time.Duration
	// Levels is K, the number of priority levels; the last one is unbounded.
	// 0 means 8.
	Levels int
	// Starvation is β, the wait-to-service ratio beyond which a waiting call is
	// promoted to the first level. 0 means 10. Use math.Inf(1) to disable the
	// guard.
	Starvation float64
}

// Queue configures the waiting queue in front of the in-flight cap
// (Limits.MaxInFlight): how many calls may wait, in which order, and how long
// a program's history is kept for the program-aware orders. The zero Queue
// means no queue: beyond MaxInFlight calls are shed at once (the SRE book's
// advice, "Handling Overload": shed rather than queue).
type Queue struct {
	// Size is how many calls per key may wait for a slot when MaxInFlight
	// calls are in flight. 0 means none; negative is an error, and so is a
	// positive Size without MaxInFlight or Config.Concurrency. A queued call
	// waits until a slot is handed to it or its context ends. A call takes
	// its slot before the buckets, so in Wait mode it holds the slot while
	// it waits for them (at most MaxWait). Under a cap on a wait in place
	// (portico.MaxWaitFromContext: a routing layer has another route) a
	// call still queued when the cap passes is shed. A hedge
	// (portico.Request.Hedge) is never queued: at the cap it is shed at
	// once, so that hedges take spare capacity only, never a first
	// attempt's place.
	Size int
	// Order is the queue's discipline. The zero value is [FCFSCall].
	Order Order
	// PLAS tunes [PLAS] and [ATLAS]; ignored for other orders.
	PLAS PLASConfig
	// Aging is how long a queued call waits before it ranks as the
	// priority above its own (portico.Request.Priority), for the order and
	// for Config.Reserve: a Sheddable call queued 2*Aging ranks as
	// Critical. Within a rank, Order decides; a full queue sheds as
	// Priorities in the package documentation says. 0 means [DefaultAging]
	// (10 s); negative is an error.
	Aging time.Duration
	// ProgramTTL is how long a program's history (arrival, attained service)
	// is kept after its last call ended, for FCFSProgram, PLAS and ATLAS. 0 means ten
	// minutes; negative is an error.
	ProgramTTL time.Duration
}

// Config configures a [Limiter]. The zero Config is not usable alone: it sets
// no limit (see [Limits]); every other field's zero value is a default.
type Config struct {
	// Limits per key; see [Limits].
	Limits

	// DefaultMaxTokens is N_max, in tokens, for requests whose MaxOutputTokens
	// is 0 (the route's default), plus the reasoning budget such a request
	// asks for ([portico.Request.OutputBound]). Zero means [DefaultMaxTokens] (1024),
	// capped at half the smallest token bucket in force (TokenBurst of
	// Limits, of each tier and, failing open, of this instance's share) so
	// that it leaves room for the input. [RequireMaxTokens] refuses such requests with a
	// [portico.Permanent] error wrapping [ErrBadRequest] on a key with a
	// token bucket: the limiter will not price a call of unknown size. A
	// value set must be below every TokenBurst, which must also hold the
	// input: at TokenBurst or above no call with the default could ever be
	// admitted.
	DefaultMaxTokens int

	// Estimator predicts N_in. nil means [portico.DefaultEstimator]. One
	// that is a [portico.InputObserver] (a [portico.Calibrated]) is given
	// the input tokens of each answer that reports them, with the estimate
	// reserved for its request. Give a Limiter whose calls another one
	// also reports [portico.EstimateOnly] of it: one call, one sample.
	Estimator portico.Estimator

	// Key maps a request to the key whose buckets it draws from. nil means per
	// client and per model: (Identity.ClientKey, Model), without allocating.
	// [ByClient] and [ByModel] are the usual alternatives; any other split
	// (tenant and route, say) is a function returning a string. Provider
	// feedback adjusts the key the call went through, so the per-route limiter
	// that should follow a provider's headers keys [ByModel].
	Key func(*portico.Request) string

	// RefusedBy is whose limit this Limiter keeps, what its refusals say
	// as their [portico.Error].RefusedBy: [portico.ClientLimit], a
	// tenant's (its plan: the caller is told to slow down), or
	// [portico.RouteLimit], a provider account's (the service is
	// saturated). Zero means ClientLimit, the default key's. Any other
	// Refuser is an error.
	RefusedBy portico.Refuser

	// Tier maps a request to its key's tier (a tenant's plan: "free",
	// "pro"), and Tiers gives each tier its limits: a key's limits are
	// Tiers[Tier(req)] when that tier exists, else Limits. Tier is called
	// when the key's entry is made (its first call, or the first after it
	// was evicted as idle), not on every call, so a key moved to another
	// tier takes the new tier's limits when its entry is made again. Each
	// tier's Limits are validated as Limits are; at most 255 tiers. Tier
	// and Tiers go together: one without the other is an error.
	// [Limiter.SetTierLimit] changes a tier's limits live.
	Tier  func(*portico.Request) string
	Tiers map[string]Limits

	// Mode is what happens when the buckets cannot admit a call now. The zero
	// value is [Reject].
	Mode Mode

	// MaxWait bounds the wait in [Wait] mode: a call whose computed wait
	// exceeds it is refused at once. 0 means 30 seconds. The context's deadline
	// bounds the wait too, and so does the cap a routing layer with another
	// route puts on a wait in place (portico.MaxWaitFromContext).
	MaxWait time.Duration

	// Queue configures the calls that wait for an in-flight slot; the zero
	// value means none wait (calls beyond MaxInFlight are shed at once).
	Queue Queue

	// MaxProviderHold caps how long one provider announcement may hold a key
	// tighter than its configured limits (see Provider feedback in the
	// package documentation): a view adopted at t slows the refill to the
	// provider's rate until t + min(reset, MaxProviderHold), then the
	// configured rate refills whatever level the view left; a later
	// announcement starts a new hold. 0 means one minute, the window of the
	// per-minute limits (RPM, TPM) a local bucket mirrors; math.MaxInt64
	// follows every reset in full. Negative is an error. [Limiter.SetLimit]
	// clears every view, however long its hold.
	MaxProviderHold time.Duration

	// Reserve is how many slots of the in-flight cap (the tighter of
	// MaxInFlight and Concurrency's limit) are kept free for each
	// priority above a call's: a Default call is shed or queued while
	// the cap less Reserve slots are taken, a Sheddable one at the cap
	// less 2*Reserve, a Critical one at the cap; never fewer than one
	// slot (portico.Priority.Slots). 0 means none: every priority may
	// fill the cap, and priorities act only in the queue. Negative, or
	// positive without MaxInFlight or Concurrency, is an error.
	Reserve int

	// Concurrency, when non-nil, caps each key's calls in flight at its
	// Limit() too, a cap that moves with the destination's capacity
	// (package adaptive's Limit), and is told of each admitted call when it
	// ends (see [Concurrency]). The tighter of it and MaxInFlight applies;
	// beyond it calls are shed or queued alike. One Concurrency learns one
	// destination: use it in a Limiter whose keys are that destination's
	// calls (a route's limiter, keyed [ByModel]).
	Concurrency Concurrency

	// Shared keeps the buckets in a store shared by several processes (see
	// [Shared]); the zero value keeps them in this process.
	Shared Shared

	// Sharing says how a Limiter with a Shared.Store draws on it: one
	// round trip per call, or leases spent locally (see [Sharing]). The
	// zero value is [Auto]: leased where the limits are large, strict
	// where they are small. Set with no Shared.Store, it is an error.
	Sharing Sharing

	// Logger receives debug records of refusals and provider feedback. nil
	// discards.
	Logger *slog.Logger

	// derived marks the Config of a Limiter a shared one builds (see
	// newShared): its Limits and tiers may limit nothing.
	derived bool
}

// Concurrency is a cap on calls in flight that moves: package adaptive's
// Limit, which follows the destination's capacity, implements it. A
// [Limiter] whose Config.Concurrency is set reads Limit on every admission
// and calls Done once for every call it admitted, when it ends. Both must be
// safe for concurrent use and quick: they run on every call, Limit under
// the key's lock.
type Concurrency interface {
	// Limit returns the most calls of a key allowed in flight now, at least 1.
	Limit() int
	// Done reports an admitted call that ended, with class the class of its
	// error (portico.OK for an answer; portico.Deadline for a layer's cut
	// of a short share of the caller's deadline, one that matches
	// portico.ErrDeadlineCut) after latency, from its admission
	// (the slot and the buckets granted) to its end, less the time the
	// caller's OnChunk held a streamed call (a slow reader's, not the
	// destination's); inflight is the
	// number of the key's calls in flight when it was admitted, itself
	// included. A call that panicked is not reported.
	Done(latency time.Duration, inflight int, class portico.Class)
}

// ByClient keys on Identity.ClientKey alone: one set of buckets per client,
// across models (the outer, per-client limiter of the recommended stack).
func ByClient(r *portico.Request) string { return r.Identity.ClientKey }

// ByModel keys on Request.Model alone: one set of buckets per model, shared by
// every client (the per-route limiter that adopts the provider's headers).
func ByModel(r *portico.Request) string { return r.Model }

// The values of Config.DefaultMaxTokens that are not a number of tokens.
const (
	// DefaultMaxTokens is what a zero Config.DefaultMaxTokens means, capped
	// at half the smallest token bucket: [portico.DefaultMaxTokens].
	DefaultMaxTokens = portico.DefaultMaxTokens
	// RequireMaxTokens, as Config.DefaultMaxTokens, refuses requests
	// without MaxOutputTokens on a key with a token bucket.
	RequireMaxTokens = -1
)

const (
	defaultMaxWait    = 30 * time.Second
	defaultQuantum    = time.Second
	defaultLevels     = 8
	defaultStarvation = 10
	defaultProgramTTL = 10 * time.Minute
	defaultHold       = time.Minute
)

// norm validates c and fills its defaults.
func (c Config) norm() (Config, error) {
	for _, step := range []func(*Config) error{(*Config).normLimits, (*Config).check, (*Config).defaultFits, (*Config).normTiers, checkShared, checkSharing} {
		if err := step(&c); err != nil {
			return c, err
		}
	}
	c.fill()
	return c, nil
}

// normLimits validates c.Limits and fills its defaults.
func (c *Config) normLimits() (err error) {
	c.Limits, err = c.Limits.norm(c.Concurrency != nil || c.derived)
	return err
}

// defaultFits returns an error when c.DefaultMaxTokens leaves no room for
// input in c.Limits' token bucket (see defaultTooLarge).
func (c *Config) defaultFits() error { return defaultTooLarge(c.DefaultMaxTokens, &c.Limits) }

// uncapped reports whether keys under lim have no in-flight cap: neither
// lim.MaxInFlight nor Config.Concurrency (a derived Config's keys are
// capped by the Limiter that derived it).
func (c *Config) uncapped(lim *Limits) bool {
	return lim.MaxInFlight == 0 && c.Concurrency == nil && !c.derived
}

// check returns the first of c's fields outside Limits and Tiers that is
// invalid, nil when none is.
func (c *Config) check() error {
	q := &c.Queue
	return rules.First(
		rules.If(c.DefaultMaxTokens < RequireMaxTokens, "ratelimit: negative Config.DefaultMaxTokens other than RequireMaxTokens"),
		rules.If(c.MaxWait < 0, "ratelimit: negative Config.MaxWait"),
		rules.If(q.Size < 0, "ratelimit: negative Config.Queue.Size"),
		rules.If(q.Size > 0 && c.uncapped(&c.Limits), "ratelimit: Config.Queue.Size without Limits.MaxInFlight or Config.Concurrency"),
		rules.If(c.Mode > Wait, "ratelimit: unknown Config.Mode "+c.Mode.String()),
		rules.If(q.Order > ATLAS, "ratelimit: unknown Config.Queue.Order "+q.Order.String()),
		rules.If(q.PLAS.Quantum < 0, "ratelimit: negative Config.Queue.PLAS.Quantum"),
		rules.If(q.PLAS.Levels < 0, "ratelimit: negative Config.Queue.PLAS.Levels"),
		rules.If(!(q.PLAS.Starvation >= 0), "ratelimit: negative or NaN Config.Queue.PLAS.Starvation"),
		rules.If(q.ProgramTTL < 0, "ratelimit: negative Config.Queue.ProgramTTL"),
		rules.If(q.Aging < 0, "ratelimit: negative Config.Queue.Aging"),
		rules.If(c.Reserve < 0, "ratelimit: negative Config.Reserve"),
		rules.If(c.Reserve > 0 && c.uncapped(&c.Limits), "ratelimit: Config.Reserve without Limits.MaxInFlight or Config.Concurrency"),
		rules.If(c.MaxProviderHold < 0, "ratelimit: negative Config.MaxProviderHold"),
		rules.If(!slices.Contains([]portico.Refuser{portico.NotRefused, portico.ClientLimit, portico.RouteLimit}, c.RefusedBy),
			"ratelimit: Config.RefusedBy "+c.RefusedBy.String()+" is neither portico.ClientLimit nor portico.RouteLimit"),
	)
}

// fill sets c's zero fields to their defaults.
func (c *Config) fill() {
	c.Estimator = cmp.Or[portico.Estimator](c.Estimator, portico.DefaultEstimator)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.RefusedBy = cmp.Or(c.RefusedBy, portico.ClientLimit)
	c.MaxWait = cmp.Or(c.MaxWait, defaultMaxWait)
	c.MaxProviderHold = cmp.Or(c.MaxProviderHold, defaultHold)
	p := &c.Queue.PLAS
	p.Quantum = cmp.Or(p.Quantum, defaultQuantum)
	p.Levels = cmp.Or(p.Levels, defaultLevels)
	p.Starvation = cmp.Or(p.Starvation, defaultStarvation)
	c.Queue.ProgramTTL = cmp.Or(c.Queue.ProgramTTL, defaultProgramTTL)
	c.Queue.Aging = cmp.Or(c.Queue.Aging, DefaultAging)
}

// within returns err, a "ratelimit: ..." error about a part of the
// configuration, as "ratelimit: where: ...".
func within(where string, err error) error {
	return errors.New("ratelimit: " + where + ": " + strings.TrimPrefix(err.Error(), "ratelimit: "))
}

// maxTiers is the most tiers a Limiter takes: an entry keeps its tier's
// index in one byte, 0 for the default limits.
const maxTiers = 255

// normTiers validates c.Tier and c.Tiers and normalizes a copy of Tiers,
// in the order of their names so that the first error is always the same.
func (c *Config) normTiers() error {
	err := rules.First(
		rules.If(c.Tier == nil && len(c.Tiers) > 0, "ratelimit: Config.Tiers without Config.Tier"),
		rules.If(c.Tier != nil && len(c.Tiers) == 0, "ratelimit: Config.Tier without Config.Tiers"),
		rules.If(len(c.Tiers) > maxTiers,
			"ratelimit: Config.Tiers has "+strconv.Itoa(len(c.Tiers))+" tiers, more than "+strconv.Itoa(maxTiers)),
	)
	if err != nil {
		return err
	}
	tiers := make(map[string]Limits, len(c.Tiers))
	for _, name := range slices.Sorted(maps.Keys(c.Tiers)) {
		n, err := c.checkLimits(c.Tiers[name])
		if err != nil {
			return within(fmt.Sprintf("Config.Tiers[%q]", name), err)
		}
		tiers[name] = n
	}
	c.Tiers = tiers
	return nil
}

// checkLimits validates lim as the limits of some keys of a Limiter of c
// and returns it normalized: what [Limiter.SetLimit] and
// [Limiter.SetTierLimit] take, and each of Config.Tiers.
func (c *Config) checkLimits(lim Limits) (Limits, error) {
	n, err := lim.norm(c.Concurrency != nil || c.derived)
	if err != nil {
		return n, err
	}
	if err := defaultTooLarge(c.DefaultMaxTokens, &n); err != nil {
		return n, err
	}
	if c.Queue.Size > 0 && c.uncapped(&n) {
		return n, errors.New("ratelimit: Limits.MaxInFlight 0 with a Config.Queue.Size and no Config.Concurrency")
	}
	return n, nil
}
