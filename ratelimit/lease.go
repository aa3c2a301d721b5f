package ratelimit

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/mono"
	"github.com/portico-llm/portico/internal/rules"
)

// Sharing says how a [Limiter] with a Config.Shared.Store draws on the
// store's buckets: one round trip per call ([Strict]), or leases of a
// slice of the buckets spent locally ([Leased]). The package
// documentation (Leases) states the bound each keeps. The zero value is
// [Auto].
type Sharing uint8

// The sharing modes.
const (
	// Auto is Leased for the limits whose every bucket's lease holds at
	// least ten calls (see [Leased]): a RequestBurst of 1,000 requests or
	// more, a TokenBurst of at least 1,000 times Config.DefaultMaxTokens
	// (1,024,000 tokens with the default), and Strict for the others (a
	// lease of a 5-per-minute bucket would be most of it). Each tier is
	// judged by its own limits, on each call. A Store that does not
	// implement [LeaseStore] is always Strict.
	Auto Sharing = iota
	// Strict asks the store on every call: one round trip to admit, the
	// settle after it; the instances together keep b + r·dt exactly.
	Strict
	// Leased takes a lease of the store's buckets (at most a hundredth of
	// each burst, valid for a twelfth of the limits' Period: 5 s a minute)
	// and admits locally while it lasts; the instances together keep
	// b + r·dt plus what their leases hold. It needs a [LeaseStore].
	Leased
)

// String returns "auto", "strict" or "leased".
func (s Sharing) String() string { return enum.Name(sharingNames[:], s, "Sharing") }

var sharingNames = [...]string{Auto: "auto", Strict: "strict", Leased: "leased"}

// Grant is an amount of a key's two buckets: requests and tokens.
type Grant struct {
	Requests, Tokens int
}

// LeaseStore is a [Store] that also leases: it hands an instance a slice
// of a key's buckets, which the instance spends locally, and takes back
// what the instance did not spend. Implementations must make Lease
// atomic, as Take.
type LeaseStore interface {
	Store
	// Lease gives back to key's buckets what an earlier lease did not
	// use (back: requests >= 0 go back, tokens > 0 go back, tokens < 0
	// are charged, each as Settle does: never above a burst, never below
	// minus one period's quota), then takes a new lease: need (one
	// request and a call's cost in tokens, a limit of 0 being no bucket)
	// at least, want at most, of each bucket as much as it holds between
	// the two, both buckets or neither. It returns what it took; when
	// need does not fit, it takes nothing (back is given all the same)
	// and returns the bucket that refused, as Take does, and the wait
	// after which want would fit: the instance asks again when a whole
	// lease can be had, not for every call (at most a lease's refill
	// later than need alone).
	Lease(ctx context.Context, key string, lim *Limits, back, need, want Grant) (got Grant, wait time.Duration, which string, err error)
}

const (
	// leaseShare: a lease takes at most 1/leaseShare of each burst (or
	// one call's cost, when that is more).
	leaseShare = 100
	// leaseCalls: Auto leases when a lease holds this many calls.
	leaseCalls = 10
	// leaseTerms: a lease is valid for Period/leaseTerms.
	leaseTerms = 12
)

// checkSharing validates c.Sharing against c.Shared.
func checkSharing(c *Config) error {
	if c.derived { // a shared Limiter's own slots or share: no store
		return nil
	}
	_, leases := c.Shared.Store.(LeaseStore)
	return rules.First(
		rules.If(c.Sharing > Leased, "ratelimit: unknown Config.Sharing "+c.Sharing.String()),
		rules.If(c.Sharing != Auto && c.Shared.Store == nil, "ratelimit: Config.Sharing "+c.Sharing.String()+" without Config.Shared.Store"),
		rules.If(c.Sharing == Leased && !leases,
			"ratelimit: Config.Sharing leased with a Config.Shared.Store that does not implement LeaseStore"),
	)
}

// leases is the leased mode of a shared Limiter: per key, this instance's
// lease of the store's buckets. nil when every call is strict.
type leases struct {
	s     *shared
	store LeaseStore
	mode  Sharing // Auto or Leased

	mu    sync.Mutex
	m     map[string]*lease
	sweep int // the size of m at which stale leases are dropped
}

// lease is one key's lease on this instance. held is what is left of it
// to admit calls from, at most size (what the store granted); refunds
// beyond size are owed back with the next lease. A lease admits calls
// until its end, then the next call gives back held and owed and takes a
// new one, in one round trip.
type lease struct {
	mu   sync.Mutex
	held Grant // tokens may be negative: a surcharge owed
	size Grant
	// asked is what calls needed since the last lease began, admitted or
	// refused: the key's demand on this instance, which sizes the next.
	asked Grant
	since time.Duration // mono: when the last lease was asked for
	owed  int           // tokens to give back beyond held
	end   time.Duration // mono: the lease admits no call from then
	live  bool          // a lease is held (until end)
	last  time.Duration // mono: the last call, for sweeping
	renew chan struct{} // closed when the lease under way is granted or refused
	view  *portico.RateLimit
	// Until refuse (mono), a call needing at least refuseCost tokens (0:
	// any call, the request bucket refused) is refused, by refuseWhich
	// ("": none).
	refuse      time.Duration
	refuseCost  int
	refuseWhich string
}

// newLeases returns the leased mode of s, nil when no call can be leased.
func newLeases(s *shared, c *Config) *leases {
	ls, ok := c.Shared.Store.(LeaseStore)
	if !ok || c.Sharing == Strict {
		return nil
	}
	return &leases{s: s, store: ls, mode: c.Sharing, m: map[string]*lease{}, sweep: 1024}
}

// on reports whether calls under lim are leased (never, when ls is nil).
func (ls *leases) on(lim *Limits) bool {
	switch {
	case ls == nil || !lim.buckets():
		return false
	case ls.mode == Leased:
		return true
	}
	call := max(ls.s.l.pricing.Load().def, 1) // tokens
	return leaseHolds(lim.Requests, lim.RequestBurst, 1) && leaseHolds(lim.Tokens, lim.TokenBurst, call)
}

// leaseHolds reports whether a lease of a bucket of limit and burst holds
// leaseCalls calls of call each, or there is no such bucket (limit 0).
func leaseHolds(limit, burst, call int) bool {
	return limit == 0 || burst/leaseShare >= leaseCalls*call
}

// storeTake is the store's Take for s, or the lease's when lim is leased.
func (s *shared) storeTake(ctx context.Context, key string, lim *Limits, cost int) (time.Duration, string, error) {
	if s.lease.on(lim) {
		return s.lease.take(ctx, key, lim, cost)
	}
	return s.store.Take(ctx, key, lim, cost)
}

// leaseSettle settles on key's lease a call that ended with d tokens back
// (< 0: charged) and the provider's view rl, and reports whether it did:
// false for a strict call.
func (s *shared) leaseSettle(key string, lim *Limits, d int, rl *portico.RateLimit) bool {
	if !s.lease.on(lim) {
		return false
	}
	s.lease.settle(key, d, rl)
	return true
}

// get returns key's lease, made when new.
func (ls *leases) get(key string, now time.Duration) *lease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	e := ls.m[key]
	if e == nil {
		if len(ls.m) >= ls.sweep {
			ls.drop(now)
		}
		e = &lease{}
		ls.m[key] = e
	}
	return e
}

// drop removes the leases no call used for a minute and none renews,
// with ls.mu held: what they held is not given back (the store's bucket
// refills it), and sets the next sweep at twice what is left.
func (ls *leases) drop(now time.Duration) {
	maps.DeleteFunc(ls.m, func(_ string, e *lease) bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.renew == nil && now-e.last > time.Minute
	})
	ls.sweep = max(2*len(ls.m), 1024)
}

// need returns what a call of cost tokens needs of lim's buckets.
func need(lim *Limits, cost int) Grant {
	var g Grant
	if lim.Requests > 0 {
		g.Requests = 1
	}
	if lim.Tokens > 0 {
		g.Tokens = cost
	}
	return g
}

// fits reports whether g holds n.
func (g Grant) fits(n Grant) bool { return g.Requests >= n.Requests && g.Tokens >= n.Tokens }

// plus and minus add and take n to and from g.
func (g Grant) plus(n Grant) Grant  { return Grant{g.Requests + n.Requests, g.Tokens + n.Tokens} }
func (g Grant) minus(n Grant) Grant { return Grant{g.Requests - n.Requests, g.Tokens - n.Tokens} }

// take admits a call of cost tokens on key's lease, taking a new lease
// when the one held cannot admit it (its end passed, too little left).
// Its results are the store's Take's: a wait is a refusal, remembered
// until it passes for calls needing as much, so that a tenant over its
// limit does not ask the store on every call; it lasts until the store
// would hold the lease asked for, which may be later than this call
// alone would fit (by a hundredth of the burst's refill at most).
func (ls *leases) take(ctx context.Context, key string, lim *Limits, cost int) (time.Duration, string, error) {
	n := need(lim, cost)
	e := ls.get(key, mono.Now())
	now, err := e.lock(ctx)
	if err != nil {
		return 0, "", err
	}
	e.last = now
	if wait, which, ok := e.spend(n, now); ok {
		e.mu.Unlock()
		return wait, which, nil
	}
	return ls.renew(ctx, key, lim, e, n, now)
}

// lock locks e once no renewal of its lease is under way (one per key at
// a time: a call waits for it) and returns the time then; or fails, e
// unlocked, with ctx's error.
func (e *lease) lock(ctx context.Context) (time.Duration, error) {
	e.mu.Lock()
	for e.renew != nil {
		ch := e.renew
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		e.mu.Lock()
	}
	return mono.Now(), nil
}

// spend decides a call needing n at now without the store when it can,
// with e.mu held: admitted from a live lease that holds n, or refused by
// the store's last refusal (wait > 0, and the bucket that refused) until
// it passes for calls needing as much. ok is false when the store must be
// asked.
func (e *lease) spend(n Grant, now time.Duration) (wait time.Duration, which string, ok bool) {
	switch {
	case e.live && now < e.end && e.held.fits(n):
		e.held = e.held.minus(n)
	case e.refuseWhich != "" && now < e.refuse && n.Tokens >= e.refuseCost:
		wait, which = e.refuse-now, e.refuseWhich
	default:
		return 0, "", false
	}
	e.asked = e.asked.plus(n)
	return wait, which, true
}

// renew ends e's lease, with e.mu held (unlocked on return), and asks the
// store for the next for a call needing n at now, in one round trip that
// gives back what e did not use; the provider's view e kept reaches the
// store first. The results are take's.
func (ls *leases) renew(ctx context.Context, key string, lim *Limits, e *lease, n Grant, now time.Duration) (time.Duration, string, error) {
	back, want, view := e.handBack(lim, n, now)
	ch := make(chan struct{})
	e.renew = ch
	e.mu.Unlock()

	ls.s.storeSettle(ctx, key, lim, 0, view) // the provider's view reaches the store with the lease
	got, wait, which, err := ls.store.Lease(ctx, key, lim, back, n, want)

	e.mu.Lock()
	defer e.mu.Unlock()
	e.renew = nil
	close(ch)
	if err != nil { // back is lost or given: either way this instance holds none of it
		return 0, "", err
	}
	e.asked = e.asked.plus(n) // admitted or refused, the call counts in the key's demand
	if wait > 0 {
		e.refuse, e.refuseCost, e.refuseWhich = mono.Add(now, wait), n.Tokens, which
		if which == "requests" {
			e.refuseCost = 0
		}
		return wait, which, nil
	}
	e.size, e.held = got, e.held.plus(got).minus(n)
	e.end, e.live = mono.Add(now, lim.Period/leaseTerms), true
	e.refuseWhich = ""
	return 0, "", nil
}

// handBack ends e's lease, with e.mu held, and returns what the store
// gets back, how much of each bucket the next lease of a call needing n
// asks for, and the provider's view to adopt first (nil: none). The ask
// is twice what calls needed since the last lease was asked for,
// admitted or refused, refunds aside (so that a hot key's leases double
// up to the cap, a hundredth of each burst, and an idle key's shrink to
// its calls), at least n; a demand older than two terms says nothing of
// the key's use now.
func (e *lease) handBack(lim *Limits, n Grant, now time.Duration) (back, want Grant, view *portico.RateLimit) {
	used := e.asked
	if now-e.since > 2*(lim.Period/leaseTerms) {
		used = Grant{}
	}
	e.asked, e.since = Grant{}, now
	back = Grant{Requests: e.held.Requests, Tokens: e.held.Tokens + e.owed}
	want = Grant{Requests: leaseAsk(2*used.Requests, n.Requests, lim.RequestBurst), Tokens: leaseAsk(2*used.Tokens, n.Tokens, lim.TokenBurst)}
	e.held, e.size, e.owed, e.live = Grant{}, Grant{}, 0, false
	view, e.view = e.view, nil
	return back, want, view
}

// leaseAsk is ask bounded by a hundredth of burst and at least need; 0
// without a bucket (burst 0).
func leaseAsk(ask, need, burst int) int {
	if burst == 0 {
		return 0
	}
	return max(min(ask, max(burst/leaseShare, 1)), need)
}

// settle gives key's lease what a call it admitted did not use (d > 0),
// up to what the lease was granted, the rest owed back to the store with
// the next lease; charges it d < 0; and keeps the provider's view rl for
// the store, sent with the next lease, and for the lease itself, which
// then holds no more than the provider says remains.
func (ls *leases) settle(key string, d int, rl *portico.RateLimit) {
	if d == 0 && rl == nil {
		return
	}
	e := ls.get(key, mono.Now())
	e.mu.Lock()
	defer e.mu.Unlock()
	add := min(d, max(e.size.Tokens-e.held.Tokens, 0)) // d < 0: all of it
	e.held.Tokens += add
	e.owed += d - add
	if rl != nil {
		e.view = rl
		e.held.Tokens = remainingCap(rl.Tokens, e.held.Tokens)
		e.held.Requests = remainingCap(rl.Requests, e.held.Requests)
	}
}

// remainingCap returns v capped at what q says remains, when it says.
func remainingCap(q portico.Quota, v int) int {
	if !q.Known {
		return v
	}
	return min(v, max(q.Remaining, 0))
}
