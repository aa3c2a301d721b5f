package retry

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/failopen"
	"github.com/portico-llm/portico/internal/rules"
)

// Schedule chooses how the wait before each retry is drawn.
type Schedule uint8

// The backoff schedules. Retry i (i >= 1, the attempt with index i) has the
// ceiling c_i = min(MaxDelay, BaseDelay * 2^(i-1)) (AWS Architecture Blog,
// "Exponential Backoff and Jitter").
const (
	// FullJitter waits uniform in [0, c_i): the default, and the schedule AWS's
	// study and gRPC's retry design (A6) recommend, since it spreads clients that
	// failed together over the whole window.
	FullJitter Schedule = iota
	// DecorrelatedJitter waits min(MaxDelay, uniform[BaseDelay, 3*prev)), where
	// prev is the previous wait of the same call (BaseDelay before the first):
	// AWS's "decorrelated jitter", which the same study finds close to full
	// jitter.
	DecorrelatedJitter
	// Exponential waits exactly c_i, with no jitter. Clients that failed together
	// retry together; use it for examples and tests that need fixed waits.
	Exponential
	// Immediate retries with no wait at all. For simulations and tests, never
	// for traffic to a real provider.
	Immediate
)

// String returns "full_jitter", "decorrelated_jitter", "exponential" or "immediate".
func (b Schedule) String() string { return enum.Name(scheduleNames[:], b, "Schedule") }

var scheduleNames = [...]string{FullJitter: "full_jitter", DecorrelatedJitter: "decorrelated_jitter", Exponential: "exponential", Immediate: "immediate"}

// Defaults used for zero [Config] fields.
const (
	// DefaultMaxAttempts is 3 attempts in total (one call, two retries), as
	// gRPC's and the OpenAI SDKs' default of 2 retries.
	DefaultMaxAttempts = 3
	// DefaultBaseDelay is the first retry's ceiling, 500 ms, as in the official
	// OpenAI and Anthropic SDKs (initial retry delay 0.5 s): LLM providers shed load
	// for seconds, not milliseconds.
	DefaultBaseDelay = 500 * time.Millisecond
	// DefaultMaxDelay caps the ceiling at 8 s, as the same SDKs do.
	DefaultMaxDelay = 8 * time.Second
	// DefaultMaxRetryAfter is the longest provider Retry-After honoured, 60 s, as
	// in the OpenAI SDKs; a longer hint ends the call at once.
	DefaultMaxRetryAfter = 60 * time.Second
	// DefaultBudgetRatio is the retry tokens each new request deposits: retries
	// stay below 10% of requests (Google SRE book, "Handling Overload": a
	// per-client retry budget of 10%).
	DefaultBudgetRatio = 0.1
	// DefaultBudgetBurst is the bucket's capacity and initial level, in retries:
	// the retries allowed before any request has deposited (Finagle's
	// RetryBudget reserve, minRetriesPerSec = 10).
	DefaultBudgetBurst = 10
	// DefaultDestinationBurst is the destination's aggregate budget capacity,
	// in retries: Finagle's RetryBudget reserve of 10 retries per second over
	// its 10 s window. It is kept per destination, shared by all its clients,
	// so it may be ten clients' bursts; in an outage of 10,000 clients it adds
	// 1% to the 10% retries.
	DefaultDestinationBurst = 100
	// DefaultBudgetKeys bounds the number of (destination, client) buckets kept.
	DefaultBudgetKeys = 10000
	// DefaultRateWindow is the window of Timeouts.MinRate: 5 s, long enough
	// that a pause between sentences or a burst of buffered tokens does not
	// end a live stream.
	DefaultRateWindow = 5 * time.Second
)

// Budget configures the retry budgets: two token buckets a retry needs a
// token from, its (destination, client key)'s and its destination's, shared
// by all clients (see the package documentation). Each new request deposits
// Ratio in the first and DestinationRatio in the second; a retry takes one
// from each, or none when either has less than one. So, under any
// concurrency and whatever fails, a client's attempts are at most
// requests*(1+Ratio) + Burst and a destination's at most
// requests*(1+DestinationRatio) + DestinationBurst, however many clients it
// has (the invariants ARCHITECTURE.md states). Eviction past MaxKeys is the
// one exception: a key evicted as idle comes back full, which can add up to
// its burst to its bound.
//
// The zero Budget means 10% with a burst of 10 per client and 10% with a
// burst of 100 per destination.
type Budget struct {
	// Off disables both budgets: retries are limited by MaxAttempts only.
	Off bool
	// Ratio is the tokens (retries) each new request deposits. Zero means
	// [DefaultBudgetRatio] (0.1); negative, NaN or infinite is an error; see
	// NoRefill for none. Tokens are kept in units of 10^-9: a decimal ratio
	// is exact, any other is rounded down, so the bound above always holds.
	Ratio float64
	// NoRefill makes both budgets fixed allowances of their bursts: new
	// requests deposit nothing.
	NoRefill bool
	// Burst is the client bucket's capacity and initial level, in retries.
	// Zero means [DefaultBudgetBurst] (10); negative, or above 4,611,686,018
	// (the fixed point's range), is an error.
	Burst int
	// DestinationRatio and DestinationBurst are Ratio and Burst for the
	// destination's bucket. Zero means Ratio's value and
	// [DefaultDestinationBurst] (100) or Burst when larger; limits as above.
	DestinationRatio float64
	DestinationBurst int
	// ClientOnly drops the destination budgets: only each client's binds, and
	// a destination's retries grow with its number of clients.
	ClientOnly bool
	// MaxKeys bounds the buckets kept, of clients and of destinations each.
	// Past it, a request whose key has no bucket makes none (the bucket
	// would be full, as a new one); when its retry would exceed it, buckets
	// that are full (indistinguishable from new ones) or unused since the
	// last sweep are evicted; if none can be, the new key shares one
	// overflow bucket. The buckets of Config.Destination without a client
	// key are kept apart, from construction, and never evicted. Zero means
	// [DefaultBudgetKeys] (10,000); negative is an error.
	MaxKeys int
	// Shared keeps both budgets in a store shared by several processes (see
	// [Shared]); the zero value keeps them in this process.
	Shared Shared
}

// Backoff is the wait before each retry: a provider's Retry-After hint when
// there is one (up to MaxRetryAfter), else a draw from the Schedule. The zero
// Backoff is full jitter with a 500 ms base and an 8 s cap, and hints up to
// 60 s.
type Backoff struct {
	// Schedule is how the wait is drawn; the zero value is [FullJitter].
	Schedule Schedule
	// BaseDelay is t0, the first retry's ceiling. Zero means
	// [DefaultBaseDelay]; negative is an error.
	BaseDelay time.Duration
	// MaxDelay is t_max, the cap on every ceiling. Zero means
	// [DefaultMaxDelay]; it must not be below BaseDelay.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest provider Retry-After hint (see
	// [portico.RetryAfterOf]) waited for; a longer one ends the call at once
	// with a [portico.RateLimited] error that carries it. Zero means
	// [DefaultMaxRetryAfter]; negative is an error.
	MaxRetryAfter time.Duration
	// Rand returns uniform random numbers in [0, 1) for the jitter. It must be
	// safe for concurrent use when the Retrier is. Nil means math/rand/v2's
	// Float64 (a per-thread source, no shared lock). Tests pass a seeded
	// source to make waits reproducible.
	Rand func() float64
}

// Timeouts bound one attempt, on top of the caller's deadline, which always
// bounds it too. An attempt that runs out is abandoned and fails with an error
// wrapping the timeout's sentinel and what the inner Model returned: class
// [portico.Transient] when the inner error is Transient (the request was never
// sent, as the openai adapter reports for a dial that hangs), so it is retried
// like any transient failure; [portico.Ambiguous] otherwise (it may have been
// sent), retried unless NoAmbiguousRetry forbids it. Zero fields mean no
// such timeout; negative ones are an error.
type Timeouts struct {
	// Attempt bounds each attempt's whole duration ([ErrAttemptTimeout]),
	// the time a streamed attempt's caller spends in OnChunk included (use
	// FirstChunk, ChunkGap and MinRate, which leave it out, to judge a
	// stream served to slow consumers).
	Attempt time.Duration
	// FirstChunk is the TTFT timeout of a streamed attempt
	// ([ErrFirstChunkTimeout]): no chunk arrived within it. Nothing reached
	// the caller, so the attempt is retried as its class allows.
	FirstChunk time.Duration
	// ChunkGap is the longest gap between two chunks of a streamed attempt
	// ([ErrChunkGapTimeout]), measured from when the caller's OnChunk
	// returned (a slow consumer's time is not the provider's; nor does it
	// count against MinRate). When a chunk already reached the caller the
	// attempt is never retried.
	ChunkGap time.Duration
	// MinRate is the slowest a streamed attempt may go once its first chunk
	// came, in tokens per second over each RateWindow ([ErrSlowStream]): a
	// trickle is ended like a stall. Tokens are estimated from the text, a
	// chunk counting (len(Text)+len(Reasoning))/4 tokens and at least 1 (OpenAI streams about
	// one token a chunk, others several). Zero means no floor; negative or
	// not finite is an error.
	MinRate float64
	// RateWindow is the sliding window MinRate is measured over, from the
	// first chunk on, in steps of a tenth of it. Zero means
	// [DefaultRateWindow] (5 s); negative, or set without MinRate, is an
	// error.
	RateWindow time.Duration
}

// Config configures a [Retrier]. The zero Config is usable: 3 attempts, full
// jitter with a 500 ms base and an 8 s cap, Retry-After hints up to 60 s, a 10%
// retry budget with a burst of 10 per (model, client key) and one with a
// burst of 100 per model, no per-attempt or streaming timeouts.
type Config struct {
	// MaxAttempts is the most attempts per call, the first included: 3 means one
	// call and up to two retries. Zero means [DefaultMaxAttempts]; 1 disables
	// retrying; negative is an error.
	MaxAttempts int
	// Backoff is the wait before each retry; the zero value is full jitter
	// from 500 ms to 8 s, and provider hints up to 60 s.
	Backoff Backoff
	// MinAttemptTime is the allowance an attempt needs (connect, generation and
	// validation): an attempt, the first included, is not started when the
	// context's deadline leaves less than this, and a wait is not begun when
	// the deadline would leave less than this after it. Zero means only an
	// expired deadline stops an attempt; negative is an error.
	MinAttemptTime time.Duration
	// Timeouts bound each attempt and, when it streams, its first chunk and
	// the gaps between chunks. A chunk that an inner layer holds back and
	// reports with [portico.Progress] (validate buffering a structured
	// answer) counts as a chunk for them. The zero value sets none.
	Timeouts Timeouts
	// Bounds are the ranges within which a request's
	// [portico.Overrides] may set Timeouts.FirstChunk, Timeouts.Attempt
	// and MaxAttempts for its call; the zero value lets a request change
	// none of them.
	Bounds Bounds
	// NoAmbiguousRetry returns [portico.Ambiguous] errors at once, as
	// [portico.Request.NoAmbiguousRetry] does for one request: for a route
	// where an attempt billed twice costs more than a failed call. By default
	// an Ambiguous attempt (a timeout after sending, say) is retried while no
	// chunk has reached the caller.
	NoAmbiguousRetry bool
	// RetryInvalidResponse retries [portico.InvalidResponse] errors on the same
	// route, as a fresh sample may pass validation. Off by default: an invalid
	// answer is usually a fallback's business, and each retry is billed.
	RetryInvalidResponse bool
	// Budget configures the retry budgets; the zero value is 10% with a burst
	// of 10 per client and 10% with a burst of 100 per destination.
	Budget Budget
	// Destination names the destination the budgets are kept for. Empty means
	// the request's Model, so each model has its own budgets.
	Destination string
	// OnRetry, when non-nil, is called synchronously before each wait for a retry,
	// never under a lock.
	OnRetry func(Info)
	// Logger receives a debug record per retry and per exhausted budget; nil
	// discards.
	Logger *slog.Logger
}

// Info describes one retry about to happen, as passed to Config.OnRetry.
type Info struct {
	// Attempt is the index of the attempt about to start: 1 for the first retry.
	Attempt int
	// Class is the class of the failure that caused the retry.
	Class portico.Class
	// Delay is the wait before the attempt starts (time).
	Delay time.Duration
	// RetryAfter is true when Delay is the provider's Retry-After hint rather
	// than the backoff schedule.
	RetryAfter bool
	// Err is the failed attempt's error.
	Err error
	// Destination and ClientKey name the budget the retry was charged to.
	Destination, ClientKey string
}

// Sentinels to branch on with errors.Is. Each is wrapped in a [*portico.Error]
// whose Class and fields say what to do next.
var (
	// ErrBudgetExhausted: a retry was due but the client's or the
	// destination's budget had no token left; the message says which. The
	// error keeps the failed attempt's class and fields, and is RefusedBy
	// [portico.RetryBudget].
	ErrBudgetExhausted = errors.New("retry: budget exhausted")
	// ErrAttemptsExhausted: every one of MaxAttempts attempts failed. The error
	// keeps the last attempt's class and fields, wraps every attempt's error, and
	// carries as Usage the sum of the attempts' billed usage (see [Retrier.Wrap]).
	ErrAttemptsExhausted = errors.New("retry: attempts exhausted")
	// ErrNoTimeLeft: the deadline leaves less than MinAttemptTime for the next
	// attempt, or the backoff wait would leave less. Class [portico.Deadline];
	// RetryAfter is the wait that did not fit, if any; NotSent when no
	// attempt was made (or none was sent).
	ErrNoTimeLeft = errors.New("retry: no time left for an attempt")
	// ErrRetryAfterTooLong: the provider's Retry-After, or the cooldown of
	// the route ([portico.ContextWithCooldown]), exceeds MaxRetryAfter,
	// what the deadline leaves, or the wait the context allows
	// ([portico.ContextWithMaxWait]: a fallback group with another route).
	// Class [portico.RateLimited] with the hint as RetryAfter.
	ErrRetryAfterTooLong = errors.New("retry: retry-after beyond the deadline")
	// ErrAttemptTimeout: an attempt ran past Timeouts.Attempt. It (and the
	// two below) also matches [portico.ErrLayerTimeout] with errors.Is, so that
	// an adapter under the retry layer tells this timeout from the caller's.
	ErrAttemptTimeout error = portico.NewLayerTimeout("retry: attempt timeout")
	// ErrFirstChunkTimeout: a streamed attempt sent no chunk within
	// Timeouts.FirstChunk.
	ErrFirstChunkTimeout error = portico.NewLayerTimeout("retry: first chunk timeout")
	// ErrChunkGapTimeout: a streamed attempt stalled for longer than
	// Timeouts.ChunkGap between chunks.
	ErrChunkGapTimeout error = portico.NewLayerTimeout("retry: chunk gap timeout")
	// ErrSlowStream: a streamed attempt sent fewer tokens than
	// Timeouts.MinRate asks over a Timeouts.RateWindow after its first chunk.
	ErrSlowStream error = portico.NewLayerTimeout("retry: stream below its minimum rate")
)

// Retrier is a retry policy: class-aware attempts, backoff with jitter,
// Retry-After first, a retry budget, deadline-aware admission of each attempt,
// and streaming timeouts. Build one with [New]; its method value Wrap is the
// [portico.Middleware]. A Retrier is safe for concurrent use, and the models it
// wraps share its budgets.
type Retrier struct {
	maxAttempts    int
	kind           Schedule
	base, max      time.Duration
	ceil           []time.Duration // ceil[i-1] is retry i's ceiling; the last repeats
	maxRetryAfter  time.Duration
	rand           func() float64
	minAttempt     time.Duration
	attemptTimeout time.Duration
	ttft, gap      time.Duration
	rateWindow     time.Duration // with MinRate; 0: no floor
	rateNeed       int64         // tokens each rateWindow must bring
	retryInvalid   bool
	noAmbiguous    bool
	dest           string
	onRetry        func(Info)
	log            *slog.Logger
	budget         *budgets       // per (destination, client); nil when Budget.Off
	dests          *budgets       // per destination; nil when Budget.Off or ClientOnly
	shared         *sharedBudgets // nil: the budgets are budget and dests alone
	// home are Config.Destination's buckets, pinned at construction: its
	// destination bucket (nil with ClientOnly) and its client bucket for
	// requests without a ClientKey, which a request finds without hashing
	// a key. Nil without a Destination or with the budgets off.
	home   *budgetPair
	bounds Bounds // of a request's Overrides
}

// New returns a Retrier configured by cfg, with zero fields taking their
// defaults. It returns an error, starting with "retry:" and naming the field,
// for a negative duration, count or ratio, an unknown Schedule, or MaxDelay
// below BaseDelay.
func New(cfg Config) (*Retrier, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	bo, to := cfg.Backoff, cfg.Timeouts
	r := &Retrier{
		maxAttempts:    cmp.Or(cfg.MaxAttempts, DefaultMaxAttempts),
		kind:           bo.Schedule,
		base:           cmp.Or(bo.BaseDelay, DefaultBaseDelay),
		max:            cmp.Or(bo.MaxDelay, DefaultMaxDelay),
		maxRetryAfter:  cmp.Or(bo.MaxRetryAfter, DefaultMaxRetryAfter),
		rand:           bo.Rand,
		minAttempt:     cfg.MinAttemptTime,
		attemptTimeout: to.Attempt,
		ttft:           to.FirstChunk,
		gap:            to.ChunkGap,
		retryInvalid:   cfg.RetryInvalidResponse,
		noAmbiguous:    cfg.NoAmbiguousRetry,
		dest:           cfg.Destination,
		onRetry:        cfg.OnRetry,
		log:            cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
	}
	if r.max < r.base {
		return nil, errors.New("retry: Config.Backoff.MaxDelay " + r.max.String() + " below BaseDelay " + r.base.String())
	}
	r.rateWindow, r.rateNeed = to.rateFloor()
	if r.rand == nil {
		r.rand = rand.Float64
	}
	r.ceil = ceilings(r.base, r.max, r.maxAttempts-1)
	r.bounds = cfg.Bounds
	if !cfg.Budget.Off {
		r.setBudgets(cfg.Budget)
	}
	return r, nil
}

// rateFloor returns MinRate's window and the tokens each window must
// bring, rounded up; zeros without MinRate.
func (to *Timeouts) rateFloor() (time.Duration, int64) {
	if to.MinRate <= 0 {
		return 0, 0
	}
	w := cmp.Or(to.RateWindow, DefaultRateWindow)
	return w, int64(math.Ceil(to.MinRate * w.Seconds()))
}

// check returns the first invalid field of c, nil when none is.
func (c *Config) check() error {
	bo, to := c.Backoff, c.Timeouts
	r := to.MinRate
	return cmp.Or(c.checkDurations(), rules.First(
		rules.If(!(r >= 0 && r < posInf),
			"retry: Config.Timeouts.MinRate is not a finite rate >= 0 ("+strconv.FormatFloat(r, 'g', -1, 64)+")"),
		rules.If(to.RateWindow > 0 && to.MinRate == 0, "retry: Config.Timeouts.RateWindow set without MinRate"),
		rules.If(c.MaxAttempts < 0, "retry: negative Config.MaxAttempts ("+strconv.Itoa(c.MaxAttempts)+")"),
	), c.Bounds.check(), rules.First(
		rules.If(bo.Schedule > Immediate, "retry: unknown Config.Backoff.Schedule "+bo.Schedule.String()),
	), c.Budget.check())
}

// checkDurations returns the error of c's first negative duration.
func (c *Config) checkDurations() error {
	bo, to := c.Backoff, c.Timeouts
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Backoff.BaseDelay", bo.BaseDelay}, {"Backoff.MaxDelay", bo.MaxDelay}, {"Backoff.MaxRetryAfter", bo.MaxRetryAfter},
		{"MinAttemptTime", c.MinAttemptTime}, {"Timeouts.Attempt", to.Attempt},
		{"Timeouts.FirstChunk", to.FirstChunk}, {"Timeouts.ChunkGap", to.ChunkGap}, {"Timeouts.RateWindow", to.RateWindow}} {
		if d.v < 0 {
			return errors.New("retry: negative Config." + d.name + " (" + d.v.String() + ")")
		}
	}
	return nil
}

// check returns the first invalid field of b, nil when none is.
func (b *Budget) check() error {
	for _, f := range []struct {
		name   string
		v, max float64
	}{{"Ratio", b.Ratio, posInf}, {"Burst", float64(b.Burst), maxBurst}, {"MaxKeys", float64(b.MaxKeys), posInf},
		{"DestinationRatio", b.DestinationRatio, posInf}, {"DestinationBurst", float64(b.DestinationBurst), maxBurst}} {
		if err := rules.First(
			rules.If(f.v < 0, "retry: negative Config.Budget."+f.name),
			rules.If(!(f.v < posInf), "retry: Config.Budget."+f.name+" is not a finite number"),
			rules.If(f.v > f.max, "retry: Config.Budget."+f.name+" above "+strconv.Itoa(maxBurst)),
		); err != nil {
			return err
		}
	}
	return checkShared(&b.Shared)
}

// setBudgets builds r's budgets from b, valid and on: in the process, or
// in b.Shared's store with the process's share for failing open.
func (r *Retrier) setBudgets(b Budget) {
	ratio := cmp.Or(b.Ratio, DefaultBudgetRatio)
	destRatio := cmp.Or(b.DestinationRatio, ratio)
	if b.NoRefill {
		ratio, destRatio = 0, 0
	}
	burst, keys := cmp.Or(b.Burst, DefaultBudgetBurst), cmp.Or(b.MaxKeys, DefaultBudgetKeys)
	destBurst := cmp.Or(b.DestinationBurst, max(DefaultDestinationBurst, burst))
	if sh := b.Shared; sh.Store != nil {
		r.shared = newSharedBudgets(sh, ratio, destRatio, burst, destBurst, b.ClientOnly)
		if n := sh.Instances; n > 0 { // the local share, for failing open
			burst, destBurst = int(failopen.Share(int64(burst), n)), int(failopen.Share(int64(destBurst), n))
		}
	}
	r.budget = newBudgets(ratio, burst, keys)
	if !b.ClientOnly {
		r.dests = newBudgets(destRatio, destBurst, keys)
	}
	if r.dest != "" {
		r.home = r.pinHome()
	}
}

// pinHome pins Config.Destination's buckets (see Retrier.home).
func (r *Retrier) pinHome() *budgetPair {
	h := &budgetPair{client: r.budget.pin(budgetKey{r.dest, ""})}
	if r.dests != nil {
		h.dest = r.dests.pin(budgetKey{r.dest, ""})
	}
	return h
}

// MustNew is like [New] but panics on a configuration error; for package-level
// stacks and examples.
func MustNew(cfg Config) *Retrier { return portico.Must(New(cfg)) }

// Wrap returns next wrapped in the retry policy; the method value r.Wrap is a
// [portico.Middleware]. Wrap panics if next is nil, a typed nil included
// ([portico.IsNil]). Safe for concurrent use.
//
// The returned Model retries what the package documentation says is
// retried. It returns next's answer; a non-retryable error of the first
// attempt, or one after a chunk reached the caller, as it is; or a
// [*portico.Error] that keeps the last attempt's class and fields, wraps
// every attempt's error and, unless it stopped at an error it does not
// retry, one of [ErrAttemptsExhausted], [ErrBudgetExhausted],
// [ErrNoTimeLeft] or [ErrRetryAfterTooLong], its Usage summing what the
// attempts billed (Errors in the package documentation tells each field).
// A context done already fails with [portico.Gone]'s error, next not
// called; one that ends during a wait, with [portico.FromContext]'s. A nil
// request is [portico.ErrNilRequest]; an attempt with neither answer nor
// error is [portico.ErrNilResponse]. With MaxAttempts 1 every error is
// returned as it is. Inner layers see each attempt through
// [portico.AttemptFromContext].
func (r *Retrier) Wrap(next portico.Model) portico.Model {
	portico.PanicIfNil(next, "retry: Wrap of a nil Model")
	return &model{r: r, next: next}
}

// Take takes one token from the retry budgets of (destination, clientKey),
// the client's and the destination's (destination as for
// [Retrier.BudgetLevel]), for an extra attempt made outside the Retrier, as
// a retry would, and reports whether it could: false, taking nothing, when
// either budget holds less than one token. Package hedge charges its hedges
// here (it implements hedge.Budget), so that hedges and retries to a
// destination share one bound. With the budgets off it always reports
// true. With a [BudgetStore] (Budget.Shared) the token comes from the
// store, under the store's own timeout. Safe for concurrent use.
func (r *Retrier) Take(destination, clientKey string) bool {
	return r.budget == nil || r.spendToken(context.Background(), destination, clientKey) == ""
}

// Refund gives back one token that [Retrier.Take] took, for a hedge that
// was refused before anything was sent (shed by a limiter, refused by a
// breaker): a refused retry takes none either. The buckets never pass their
// capacity. With a [BudgetStore] (Budget.Shared) it does nothing: the store
// has no refund, so the token stays spent, which only makes the budget
// stricter. Safe for concurrent use.
func (r *Retrier) Refund(destination, clientKey string) {
	if r.budget == nil || r.shared != nil {
		return
	}
	p := r.pairOf(destination, clientKey)
	p.client.deposit(unit, r.budget.capacity)
	if p.dest != nil {
		p.dest.deposit(unit, r.dests.capacity)
	}
}

// BudgetLevel returns the retry tokens left for (destination, client key), where
// destination is Config.Destination or the request's Model: how many retries
// the budgets would allow now, the lower of the client's and the
// destination's level. It returns +Inf when the budgets are off, and a full
// bucket's level for a key it does not hold (never used, evicted, or sharing
// the overflow bucket past Budget.MaxKeys). With a [BudgetStore]
// (Budget.Shared) it reads the local share, what failing open would allow,
// not the store.
func (r *Retrier) BudgetLevel(destination, clientKey string) float64 {
	if r.budget == nil {
		return posInf
	}
	lv := r.budget.level(destination, clientKey)
	if r.dests != nil {
		lv = min(lv, r.dests.level(destination, ""))
	}
	return lv
}
