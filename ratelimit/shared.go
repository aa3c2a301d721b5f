package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/admit"
	"github.com/portico-llm/portico/internal/failopen"
	"github.com/portico-llm/portico/internal/mono"
)

// Store keeps the request and token buckets of a [Limiter]'s keys outside
// the process, in a store that several processes share (package redisstore
// implements it over Redis), so that one limit holds across every instance
// of a service. Implementations must be safe for concurrent use, make each
// method atomic, and take time from the store's own clock, never from the
// callers'. An absent key is a full bucket. An error says the store could
// not decide (unreachable, too slow); the Limiter then applies
// [Shared.FailOpen].
type Store interface {
	// Take admits one call on key's buckets under lim: cost tokens
	// (N_in + N_max) and one request, both or neither, as the in-memory
	// buckets do (a limit of 0 is no bucket). It returns wait 0 when both
	// had room and are charged; otherwise it charges nothing and returns
	// the wait after which the same Take would succeed and the bucket that
	// refused, "tokens" or "requests".
	Take(ctx context.Context, key string, lim *Limits, cost int) (wait time.Duration, which string, err error)
	// Settle ends a call that Take admitted: tokens > 0 go back to the
	// token bucket, never beyond its capacity; tokens < 0 are charged, down
	// to minus one period's quota (lim.Tokens) at most; a non-nil rl is
	// adopted as package documentation's Provider feedback says, for hold
	// at most, and tightens the key for every process. Settles commute
	// (each is a sum into the level, capped, and the tightest view wins),
	// so a Store may apply one later, after Settle returned (redisstore
	// sends them from a bounded queue: see its Store.Close), and need not
	// report its failure; the bound of package documentation's Shared
	// buckets then holds on what the store applied, and a settle lost
	// loses a refund (stricter) or a surcharge (looser by it).
	Settle(ctx context.Context, key string, lim *Limits, tokens int, rl *portico.RateLimit, hold time.Duration) error
}

// Returner is implemented by a [Store] that can give back a whole take:
// Return undoes a Take of cost on key that admitted a call the request
// then never made (its route was not called): cost tokens and one
// request go back, each never beyond its bucket's capacity, applied as
// a Settle is (later, its failure unreported). A Store without it gets
// a Settle of the tokens, and the request stays counted.
type Returner interface {
	Return(ctx context.Context, key string, lim *Limits, cost int) error
}

// Shared is the [portico.Shared] a [Limiter] takes (Config.Shared): its
// request and token buckets in a [Store]. The in-flight cap and the queue
// (Limits.MaxInFlight, Config.Concurrency, Config.Queue) stay per
// process, and Name keeps the limiter's buckets apart from other limiters'
// on the same Store.
//
// When the store fails the call is decided with FailOpen on this
// instance's share of the buckets, else refused, [portico.Rejected]
// wrapping [ErrStoreUnavailable]. The N instances together stay within
// b + r·dt plus the allowance the package documentation states (Shared
// buckets).
type Shared = portico.Shared[Store]

// ErrStoreUnavailable is wrapped by the error of a call refused because the
// shared [Store] failed and [Shared.FailOpen] is off: nothing was sent.
// Class [portico.Rejected], RefusedBy the Limiter's Config.RefusedBy as
// every refusal of that Limiter; the store's error is wrapped too.
var ErrStoreUnavailable = errors.New("ratelimit: shared store unavailable")

// checkShared validates c.Shared; c's other fields are normalized.
func checkShared(c *Config) error {
	s := &c.Shared
	if err := failopen.Check("Config.Shared", s.Store != nil, s.FailOpen, s.Instances); err != nil {
		return fmt.Errorf("ratelimit: %w", err)
	}
	if err := shareFits(c, &c.Limits); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tiers)) {
		lim := c.Tiers[name]
		if err := shareFits(c, &lim); err != nil {
			return within(fmt.Sprintf("Config.Tiers[%q]", name), err)
		}
	}
	return nil
}

// shareFits returns an error when failing open would give lim a
// TokenBurst share with no room for Config.DefaultMaxTokens.
func shareFits(c *Config, lim *Limits) error {
	s := &c.Shared
	if !s.FailOpen {
		return nil
	}
	share := scale(*lim, s.Instances)
	if lim.Tokens > 0 && c.DefaultMaxTokens >= share.TokenBurst {
		return errors.New("ratelimit: Config.Shared.Instances " + strconv.Itoa(s.Instances) + " leaves a TokenBurst share of " +
			strconv.Itoa(share.TokenBurst) + ", no room for Config.DefaultMaxTokens " + strconv.Itoa(c.DefaultMaxTokens))
	}
	return nil
}

// scale returns one instance's share of l among n: each limit and burst
// divided by n, rounded down, at least 1; the in-flight cap unchanged.
func scale(l Limits, n int) Limits {
	div := func(v int) int { return int(failopen.Share(int64(v), n)) }
	l.Requests, l.RequestBurst = div(l.Requests), div(l.RequestBurst)
	l.Tokens, l.TokenBurst = div(l.Tokens), div(l.TokenBurst)
	return l
}

// shared is the state of a Limiter whose buckets are in a Store: a Limiter
// holding only the in-flight cap and queue (nil without MaxInFlight or
// Concurrency in any tier), and one holding the local share of the buckets
// for failing open (nil when failing closed). The full limits given to the
// store are l's own (Limiter.limitsOf), and both Limiters have l's tiers,
// by the same indexes.
type shared struct {
	l      *Limiter
	store  Store
	prefix string // of every key in the store: Shared.Name, length-prefixed, even empty
	slots  *Limiter
	local  *Limiter
	lines  lines   // Wait mode's waiters, in line per key
	lease  *leases // the leased mode (lease.go); nil: every call strict
}

// newShared builds l's shared state from the normalized c.
func newShared(l *Limiter, c Config) *shared {
	s := &shared{l: l, store: c.Shared.Store, prefix: failopen.Prefix(c.Shared.Name)}
	s.lease = newLeases(s, &c)
	base := c
	base.Shared, base.derived = Shared{}, true
	if c.capped(l.allLimits()) {
		s.slots = derive(base, slotsOf)
	}
	if n := c.Shared.Instances; c.Shared.FailOpen && slices.ContainsFunc(l.allLimits(), (*Limits).buckets) {
		base.Queue, base.Concurrency = Queue{}, nil
		s.local = derive(base, func(l Limits) Limits { return shareOf(l, n) })
		s.local.lead = failopen.Lead(n)
	}
	return s
}

// slotsOf is the part of l a shared Limiter's slots keep: the in-flight
// cap. shareOf is the part its local share keeps: 1/n of the buckets.
func slotsOf(l Limits) Limits { return Limits{MaxInFlight: l.MaxInFlight} }

func shareOf(l Limits, n int) Limits {
	l = scale(l, n)
	l.MaxInFlight = 0
	return l
}

// capped reports whether some of all, the limits of a Limiter of c, or
// c.Concurrency caps the calls in flight: a shared Limiter then has slots.
func (c *Config) capped(all []*Limits) bool {
	return c.Concurrency != nil || slices.ContainsFunc(all, func(l *Limits) bool { return l.MaxInFlight > 0 })
}

// derive is New for c, already validated, with f applied to its limits
// and to each tier's.
func derive(c Config, f func(Limits) Limits) *Limiter {
	tiers := make(map[string]Limits, len(c.Tiers))
	for name, t := range c.Tiers {
		tiers[name] = f(t)
	}
	c.Limits, c.Tiers = f(c.Limits), tiers
	l, err := New(c)
	if err != nil {
		panic(err) // unreachable: derived from a valid Config
	}
	return l
}

// wrap is Wrap for a shared Limiter: the in-flight cap and queue outside,
// the shared buckets inside.
func (s *shared) wrap(next portico.Model) portico.Model {
	var m portico.Model = &sharedModel{s: s, next: next}
	if s.slots != nil {
		m = s.slots.Wrap(m)
	}
	return m
}

// setLimit is set for a shared Limiter, with n validated as tier ix's new
// limits and l.setMu held: the in-flight cap and the local share follow,
// and the store's calls use n once set stores it in l. The provider views
// kept in the store are not cleared: each expires with its hold.
func (s *shared) setLimit(ix uint8, n Limits) error {
	c := &s.l.cfg
	if err := shareFits(c, &n); err != nil {
		return err
	}
	if err := s.keepsShape(ix, n); err != nil {
		return err
	}
	if s.local != nil {
		if err := s.local.set(ix, shareOf(n, c.Shared.Instances)); err != nil {
			return err
		}
	}
	if s.slots != nil {
		return s.slots.set(ix, slotsOf(n))
	}
	return nil
}

// keepsShape returns an error when n, as tier ix's limits, would add or
// remove the in-flight cap or, failing open, every bucket: the Limiters
// newShared built (slots, local) would no longer match.
func (s *shared) keepsShape(ix uint8, n Limits) error {
	c := &s.l.cfg
	all := s.l.allLimits()
	all[ix] = &n
	if (s.slots == nil) == c.capped(all) {
		return errors.New("ratelimit: SetLimit cannot add or remove MaxInFlight on a Limiter with a Config.Shared.Store")
	}
	if c.Shared.FailOpen && (s.local == nil) == slices.ContainsFunc(all, (*Limits).buckets) {
		return errors.New("ratelimit: SetLimit cannot add or remove every bucket on a Limiter with a Config.Shared.FailOpen")
	}
	return nil
}

// key returns req's key in the store, after the length-prefixed
// Shared.Name: "=" and Config.Key's string, or the client key and the
// model, length-prefixed (a digit first). No two (Name, key) tuples share
// a key; the Store encodes it for its own syntax and bounds its length.
func (s *shared) key(req *portico.Request) string {
	if s.l.cfg.Key != nil {
		return s.prefix + "=" + s.l.cfg.Key(req)
	}
	c := req.Identity.ClientKey
	return s.prefix + strconv.Itoa(len(c)) + ":" + c + "/" + req.Model
}

// sharedModel is the Model a shared Limiter wraps around next: buckets in
// the store, the local share when it fails open.
type sharedModel struct {
	s    *shared
	next portico.Model
}

func (m *sharedModel) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if err := portico.Unstarted(ctx, req); err != nil {
		return nil, err // the store is not asked
	}
	s, l := m.s, m.s.l
	tier := l.tierOf(req) // on every call: the store keeps no entry
	lim := l.limitsOf(tier)
	if !lim.buckets() { // only the in-flight cap, outside
		return m.next.Generate(ctx, req)
	}
	var t ticket
	if err := l.priceIn(req, lim, &t); err != nil {
		return nil, err
	}
	key := s.key(req)
	if resp, err, admitted := m.admit(ctx, req, key, tier, lim, &t); !admitted {
		return resp, err
	}
	done := false
	defer func() {
		if !done { // next panicked: refund nothing, re-panic
			s.settle(ctx, req, key, lim, &t, nil, nil)
		}
	}()
	resp, err := portico.Answer(m.next.Generate(ctx, req))
	done = true
	s.settle(ctx, req, key, lim, &t, resp, err)
	return resp, err
}

// admit takes req's place in the store's buckets for key, waiting in
// Wait mode. It returns admitted true once the store charged the call;
// otherwise the call's outcome: refused, decided without the store
// (degraded: the call may have run on the local share), or ended by ctx.
// A waiter waits in its key's line behind the process's earlier waiters,
// and asks the store again only at the head (see lines).
func (m *sharedModel) admit(ctx context.Context, req *portico.Request, key string, tier uint8, lim *Limits, t *ticket) (*portico.Response, error, bool) {
	s, l := m.s, m.s.l
	start := mono.Now()
	var ln *line // the key's line, once this waiter holds its turn
	defer func() { s.lines.quit(key, ln) }()
	for first := true; ; first = false {
		wait, which, err := s.take(ctx, req, key, lim, t.reserve)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, notSent(portico.FromContext(ctx)), false
		case err != nil:
			s.lines.quit(key, ln) // the line is for asking the store: give it back before the model runs
			ln = nil
			resp, err := s.degraded(ctx, m.next, req, tier, t, err)
			return resp, err, false
		case wait == 0:
			return nil, nil, true
		}
		left := l.left(ctx, start)
		if l.refusesWait(req, wait, left) {
			return nil, l.limited(ctx, req, which, wait), false
		}
		if first {
			portico.Observe(ctx, portico.Event{Kind: portico.EventRateLimitWait, Route: req.Model, Delay: wait, Reason: which})
		}
		if ln, err = s.waitTurn(ctx, req, key, ln, left, which, wait); err != nil {
			return nil, err, false
		}
	}
}

// waitTurn waits, at most left, before a call the store refused for wait
// asks again: for its turn in key's line when it holds none yet (ln nil),
// then for wait, unless a waiter held the line before it (admitted since:
// the wait is stale, and the call asks at once). It returns the line it
// holds, or the call's error (refused as the store refused it, which and
// wait, or ended by ctx).
func (s *shared) waitTurn(ctx context.Context, req *portico.Request, key string, ln *line, left time.Duration, which string, wait time.Duration) (*line, error) {
	if ln == nil {
		held, waited, err := s.joinLine(ctx, req, key, left, which, wait)
		if err != nil || waited {
			return held, err
		}
		ln = held
	}
	return ln, pause(ctx, wait)
}

// left is what MaxWait, counted from start, and ctx's deadline leave for
// a wait.
func (l *Limiter) left(ctx context.Context, start time.Duration) time.Duration {
	now := mono.Now()
	left := l.cfg.MaxWait - (now - start)
	if deadline, ok := ctx.Deadline(); ok {
		left = min(left, mono.Of(deadline)-now)
	}
	return left
}

// take asks the store to admit a call of cost tokens on key, unless the
// request's admission plan (package stack; internal/admit) took it
// already, and keeps the local share in step with the answer (see
// mirror.go).
func (s *shared) take(ctx context.Context, req *portico.Request, key string, lim *Limits, cost int) (time.Duration, string, error) {
	var wait time.Duration
	var which string
	var err error
	if b := s.planned(ctx, key, cost); b != nil {
		wait, which = b.Wait, b.Which
	} else {
		wait, which, err = s.storeTake(ctx, key, lim, cost)
	}
	switch {
	case err != nil || s.local == nil:
	case wait == 0:
		s.local.mirrorTake(req, cost)
	default:
		s.local.mirrorRefused(req, lim, which, wait, cost, s.l.cfg.Shared.Instances)
	}
	return wait, which, err
}

// planned claims the take of key that the request's admission plan made,
// nil when it made none; one priced otherwise than cost since the plan
// (unreachable) is given back, and nil returned.
func (s *shared) planned(ctx context.Context, key string, cost int) *admit.Bucket {
	b := admit.From(ctx).Take(s, key)
	if b != nil && b.Cost != cost {
		s.Unclaimed(ctx, b)
		return nil
	}
	return b
}

// PlanAdmission adds req's take on l's shared buckets to p, the
// request's admission asked ahead in one call to the store (package stack
// builds p; its type is internal). It reports false, adding nothing, when
// l has no shared Store, p's buckets are full, req is a hedge, its
// buckets are only the in-flight cap, or it cannot be priced (the call
// then fails as it would have).
func (l *Limiter) PlanAdmission(req *portico.Request, p *admit.Plan) bool {
	s := l.shared
	if s == nil || p.NBuckets == len(p.Buckets) || req.Hedge {
		return false
	}
	tier := l.tierOf(req)
	lim := l.limitsOf(tier)
	var t ticket
	if !lim.buckets() || s.lease.on(lim) || l.priceIn(req, lim, &t) != nil { // a leased key asks no store per call
		return false
	}
	p.Buckets[p.NBuckets] = admit.Bucket{Owner: s, Key: s.key(req), Tier: tier, Cost: t.reserve, // a rate and burst of 0: no such bucket
		TokenRate: admit.Rate(lim.Tokens, lim.Period), TokenBurst: lim.TokenBurst,
		RequestRate: admit.Rate(lim.Requests, lim.Period), RequestBurst: lim.RequestBurst}
	p.NBuckets++
	return true
}

// Admission returns the store that runs PlanAdmission's plans for l, nil
// without a shared Store that joins one (see redisstore).
func (l *Limiter) Admission() admit.Store {
	if l.shared == nil {
		return nil
	}
	return admit.AdmissionOf(l.shared.store)
}

// Unclaimed gives back a take a request's plan charged on s's store that
// s never claimed (its route was not called): its tokens and its request
// when the store is a [Returner], else its tokens (the request stays
// counted: the key is stricter by one request).
func (s *shared) Unclaimed(ctx context.Context, b *admit.Bucket) {
	if r, ok := s.store.(Returner); ok {
		if err := r.Return(context.WithoutCancel(ctx), b.Key, s.l.limitsOf(b.Tier), b.Cost); err != nil {
			s.l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "ratelimit: shared store return failed",
				slog.Int("tokens", b.Cost), slog.String("err", err.Error()))
		}
		return
	}
	s.storeSettle(ctx, b.Key, s.l.limitsOf(b.Tier), b.Cost, nil)
}

// joinLine takes the turn of key's line, waiting up to left behind the
// process's earlier waiters; waited says another held it. A call that
// cannot wait its turn is refused as the store refused it (which, wait),
// or ended by ctx.
func (s *shared) joinLine(ctx context.Context, req *portico.Request, key string, left time.Duration, which string, wait time.Duration) (*line, bool, error) {
	ln := s.lines.join(key)
	waited, err := ln.wait(ctx, left)
	switch {
	case err == nil:
		return ln, waited, nil
	case err == errLineTimeout:
		s.lines.leave(key, ln)
		return nil, true, s.l.limited(ctx, req, which, wait)
	}
	s.lines.leave(key, ln)
	return nil, true, notSent(portico.FromContext(ctx))
}

// pause waits d, or fails with the error of a call ctx ended.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return notSent(portico.FromContext(ctx))
	}
}

// settle gives the store, or the key's lease, what the call admitted with
// t did not use, and the provider's view of its limits.
func (s *shared) settle(ctx context.Context, req *portico.Request, key string, lim *Limits, t *ticket, resp *portico.Response, err error) {
	rl, d := s.l.settlement(req, t, resp, err)
	if s.local != nil {
		s.local.mirrorSettle(req, d)
	}
	if !s.leaseSettle(key, lim, d, rl) {
		s.storeSettle(ctx, key, lim, d, rl)
	}
}

// storeSettle settles tokens (< 0: charged) and the provider's view rl on
// key in the store, when there is either, holding rl for
// Config.MaxProviderHold at most, even once ctx ends. A failed settle is logged: the refund is lost (the key
// is stricter until it refills), or the surcharge (the key is looser by
// it).
func (s *shared) storeSettle(ctx context.Context, key string, lim *Limits, tokens int, rl *portico.RateLimit) {
	if tokens == 0 && rl == nil {
		return
	}
	if err := s.store.Settle(context.WithoutCancel(ctx), key, lim, tokens, rl, s.l.cfg.MaxProviderHold); err != nil {
		s.l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "ratelimit: shared store settle failed",
			slog.Int("tokens", tokens), slog.Bool("provider_view", rl != nil), slog.String("err", err.Error()))
	}
}

// degraded decides a call the store could not: on the local share when
// failing open, else refused.
func (s *shared) degraded(ctx context.Context, next portico.Model, req *portico.Request, tier uint8, t *ticket, cause error) (*portico.Response, error) {
	l := s.l
	if !l.cfg.Shared.FailOpen {
		portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Route: req.Model, Class: portico.Transient, Reason: "ratelimit:fail_closed"})
		l.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "ratelimit: shared store unavailable, call refused", logModel(req.Model), slog.String("err", cause.Error()))
		return nil, &portico.Error{Class: portico.Rejected, RefusedBy: l.cfg.RefusedBy, Model: req.Model, Reason: "shared store unavailable", NotSent: true,
			Err: portico.Join(ErrStoreUnavailable, cause)}
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Route: req.Model, Class: portico.Transient, Reason: "ratelimit:fail_open"})
	l.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "ratelimit: shared store unavailable, local share decides", logModel(req.Model), slog.String("err", cause.Error()))
	if s.local == nil { // no buckets, only the in-flight cap
		return next.Generate(ctx, req)
	}
	if lim := s.local.limitsOf(tier); lim.Tokens > 0 && t.reserve > lim.TokenBurst {
		// The shared bucket could hold the call, this instance's share
		// cannot: refused for now, not Incompatible.
		return nil, l.limited(ctx, req, "tokens", 0)
	}
	return s.local.generate(ctx, next, req)
}
