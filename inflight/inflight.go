package inflight

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/rules"
)

// DefaultTTL is the lease TTL of a Config whose TTL is zero.
const DefaultTTL = 30 * time.Second

// Config configures [Caps]. Max is required; every other zero field is a
// default.
type Config struct {
	// Key maps a request to the key whose calls are capped; nil means
	// ByClient (Identity.ClientKey). An empty key is a key like any other.
	Key func(*portico.Request) string
	// Max is the most calls of one key in flight at once across every
	// instance sharing the store. It must be positive.
	Max int
	// Reserve is how many of Max slots are kept free for each priority
	// above a call's (portico.Request.Priority): a Default call is refused
	// while Max-Reserve slots are taken, a Sheddable one at Max-2*Reserve,
	// a Critical one at Max; never fewer than one slot
	// (portico.Priority.Slots). Failing open, an instance reserves the
	// same share of its own slots, rounded down. Zero means none; negative
	// is an error.
	Reserve int
	// TTL is how long a lease lives without renewal: the longest a slot
	// whose release was lost stays taken. Zero means DefaultTTL; it must
	// not be negative.
	TTL time.Duration
	// Renew is how often a running call renews its lease. Zero means TTL/3;
	// it must be below TTL.
	Renew time.Duration
	// Shared keeps the leases in a store shared by every instance (nil
	// Store: a [Memory] of this process); see the package documentation
	// for FailOpen and Instances.
	Shared portico.Shared[Store]
}

// ByClient keys the cap on Identity.ClientKey.
func ByClient(r *portico.Request) string { return r.Identity.ClientKey }

// Caps caps each key's calls in flight; build it with [New]. It is safe
// for concurrent use.
type Caps struct {
	key        func(*portico.Request) string
	max        int
	instances  int // Shared.Instances: failing open, an instance has max/instances slots
	reserve    int
	ttl, every time.Duration
	store      Store
	local      *Memory
	name       string
	failOpen   bool
	base       string
	ids        atomic.Uint64
	lost       atomic.Int64
}

// New returns the Caps cfg describes, or an error starting "inflight:"
// naming the field: Max not positive, a negative TTL, Renew not below
// TTL, FailOpen without Instances or Instances without FailOpen.
func New(cfg Config) (*Caps, error) {
	cfg.TTL = cmp.Or(cfg.TTL, DefaultTTL)
	cfg.Renew = cmp.Or(cfg.Renew, cfg.TTL/3)
	if err := rules.First(
		rules.If(cfg.Max <= 0, "inflight: Config.Max must be positive"),
		rules.If(cfg.Reserve < 0, "inflight: negative Config.Reserve"),
		rules.If(cfg.TTL < 0, "inflight: negative Config.TTL"),
		rules.If(cfg.Renew <= 0 || cfg.Renew >= cfg.TTL, "inflight: Config.Renew must be positive and below TTL"),
		rules.If(cfg.Shared.FailOpen && cfg.Shared.Instances <= 0, "inflight: Config.Shared.FailOpen needs Shared.Instances > 0"),
		rules.If(!cfg.Shared.FailOpen && cfg.Shared.Instances != 0, "inflight: Config.Shared.Instances without FailOpen"),
	); err != nil {
		return nil, err
	}
	if cfg.Key == nil {
		cfg.Key = ByClient
	}
	c := &Caps{key: cfg.Key, max: cfg.Max, instances: cfg.Shared.Instances, reserve: cfg.Reserve, ttl: cfg.TTL, every: cfg.Renew,
		local: &Memory{}, name: cfg.Shared.Name, failOpen: cfg.Shared.FailOpen}
	c.store = cmp.Or[Store](cfg.Shared.Store, c.local)
	var b [8]byte
	rand.Read(b[:])
	c.base = hex.EncodeToString(b[:]) + "."
	return c, nil
}

// Lost returns how many leases of calls still running expired before they
// could be renewed (their calls ran on uncounted).
func (c *Caps) Lost() int64 { return c.lost.Load() }

// Wrap returns next behind the cap: see the package documentation.
func (c *Caps) Wrap(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if err := portico.Gone(ctx); err != nil {
			return nil, err
		}
		l := &Lease{Name: c.name, Key: c.key(req), ID: c.base + strconv.FormatUint(c.ids.Add(1), 36), Max: c.slots(c.max, req.Priority), TTL: c.ttl}
		st, err := c.acquire(ctx, req, l)
		if err != nil {
			return nil, err
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go c.renew(ctx, st, l, stop, done)
		defer func() {
			close(stop)
			<-done
			_ = st.Release(context.WithoutCancel(ctx), l) // lost: back within TTL
		}()
		return next.Generate(ctx, req)
	})
}

// acquire takes l in the store, or in the local Memory with this
// instance's share while the store fails with FailOpen; it returns the
// store that holds it, or the call's error.
func (c *Caps) acquire(ctx context.Context, req *portico.Request, l *Lease) (Store, error) {
	st := c.store
	ok, err := st.Acquire(ctx, l)
	if err != nil {
		if err := c.degrade(ctx, req, l, err); err != nil {
			return nil, err
		}
		st = c.local
		ok, _ = c.local.Acquire(ctx, l) // a Memory never fails
	}
	if !ok {
		return nil, &portico.Error{Class: portico.Rejected, RefusedBy: portico.ClientLimit, NotSent: true, Reason: "tenant in-flight cap", Err: ErrFull}
	}
	return st, nil
}

// degrade decides a call whose acquire of l failed with err in the
// shared store: it gives back what the store may have taken, then
// returns the call's error (ctx ended, or failing closed), or nil with
// l.Max set to this instance's share of the cap, for the local Memory.
func (c *Caps) degrade(ctx context.Context, req *portico.Request, l *Lease, err error) error {
	_ = c.store.Release(context.WithoutCancel(ctx), l) // it may have been taken
	if gone := portico.Gone(ctx); gone != nil {
		return gone
	}
	if !c.failOpen {
		portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Route: req.Model, Class: portico.Transient, Reason: "inflight:fail_closed"})
		return &portico.Error{Class: portico.Rejected, RefusedBy: portico.ClientLimit, NotSent: true, Err: errors.Join(ErrStore, err)}
	}
	portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Route: req.Model, Class: portico.Transient, Reason: "inflight:fail_open"})
	l.Max = c.slots(max(1, c.max/c.instances), req.Priority)
	return nil
}

// slots is how many of limit slots (Max, or a fail-open share of it) a
// call of priority p may fill: Reserve scaled to limit, kept free for
// each priority above p.
func (c *Caps) slots(limit int, p portico.Priority) int {
	return p.Slots(limit, c.reserve*limit/c.max)
}

// renew renews l in st every c.every until stop is closed, then closes
// done. A lease found expired is counted lost and renewed no more; a
// renewal that fails is tried again at the next tick.
func (c *Caps) renew(ctx context.Context, st Store, l *Lease, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(c.every)
	defer t.Stop()
	rctx := context.WithoutCancel(ctx)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if ok, err := st.Renew(rctx, l); err == nil && !ok {
			c.lost.Add(1)
			portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Class: portico.Transient, Reason: "inflight:lease_lost"})
			<-stop
			return
		}
	}
}

// ErrFull is wrapped by the error of a call refused because its key held
// Config.Max calls in flight.
var ErrFull = errors.New("inflight: tenant's in-flight cap reached")

// ErrStore is wrapped, with the store's error, by the error of a call
// refused because the shared store failed (without FailOpen).
var ErrStore = errors.New("inflight: lease store unavailable")
