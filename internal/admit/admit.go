// Package admit is the one shape of a request's admission done ahead in a
// shared store: everything a request must know before it is sent (the
// client's bucket, the first route's bucket, the retry budgets' deposit)
// asked in one call, so one round trip, instead of one per layer.
//
// Package stack builds a [Plan] from the layers it placed (the client
// limiter, the first route's limiter and retrier) when their stores join
// one [Store] ([Joiner]), has the Store run it, and passes it down in the
// request's context ([With]). Each layer then finds its own step done
// ([Plan.Take], [Plan.Deposited]) and skips its store call; a step not
// done (the plan stopped at an earlier refusal, or it is not in the plan:
// a later route of a fallback, a hedge) is asked of the store as before.
// A step is claimed once: a second pass through the same layer (a hedge
// to the same route) asks the store itself.
//
// A Store runs the steps in order, as the layers would have: each bucket
// take admits or refuses as ratelimit's Store.Take does, and a refusal
// stops the plan (the later steps are not done, nothing of them is
// charged; the earlier takes stay charged, as the layer above would have
// been charged before the layer below asked); the deposit is made once
// every take admitted. What the plan charged to a bucket whose layer the
// request then never reached (the group skipped the first route) is given
// back by [Plan.Unclaimed], after the call.
package admit

import (
	"context"
	"sync/atomic"
	"time"
)

// Bucket is one take on a limiter's shared buckets: Store.Take's
// arguments, as the store applies them, and its result.
type Bucket struct {
	Owner Owner  // the layer whose step this is
	Key   string // its key in the store
	Tier  uint8  // the owner's tier of the request (its limits)
	// TokenRate and RequestRate are the refill rates per second (0: no
	// such bucket); TokenBurst and RequestBurst the capacities.
	TokenRate, RequestRate   float64
	TokenBurst, RequestBurst int
	Cost                     int // tokens (N_in + N_max); always one request

	// Set by the Store: Done once the take was decided (Err nil), then
	// Wait 0 when admitted and charged, else the wait after which the same
	// take would succeed and Which bucket refused ("tokens", "requests").
	Done  bool
	Wait  time.Duration
	Which string

	claimed atomic.Bool
}

// Deposit is a retry layer's deposit of one new request in its budgets
// (retry.BudgetStore.Deposit), in billionths of a retry.
type Deposit struct {
	Owner                                   Owner
	Dest, Client                            string
	Deposit, Capacity                       int64
	DestinationDeposit, DestinationCapacity int64 // 0: no destination budget

	Done    bool // set by the Store: credited
	claimed atomic.Bool
}

// Owner is the layer of a step. Unclaimed gives back a take the plan
// charged that the request never claimed (a full refund of its cost).
type Owner interface {
	Unclaimed(ctx context.Context, b *Bucket)
}

// Plan is a request's admission: up to two bucket takes, in order, and a
// deposit. Err is the Store's error when it could not decide (every step
// is then left not done, and each layer asks its store, which fails as
// fast as it does in an outage).
type Plan struct {
	Buckets    [2]Bucket
	NBuckets   int
	Deposit    Deposit
	HasDeposit bool
}

// Store runs a Plan atomically in one call: see the package
// documentation for the order. An error leaves every step not done.
type Store interface {
	Admit(ctx context.Context, p *Plan) error
}

// Joiner is implemented by a layer's store (a ratelimit.Store, a
// retry.BudgetStore) that can run its step in a Plan: Admission returns
// the Store that does, nil when it cannot (a Redis Cluster, whose keys of
// one request live in several slots). Steps whose Admissions are the same
// Store join one Plan.
type Joiner interface {
	Admission() Store
}

// AdmissionOf returns the Store that store joins, or nil.
func AdmissionOf(store any) Store {
	if j, ok := store.(Joiner); ok {
		return j.Admission()
	}
	return nil
}

type ctxKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p *Plan) context.Context { return context.WithValue(ctx, ctxKey{}, p) }

// From returns the Plan ctx carries, or nil.
func From(ctx context.Context) *Plan {
	p, _ := ctx.Value(ctxKey{}).(*Plan)
	return p
}

// Take claims owner's done take on key in p (nil p: none), once.
func (p *Plan) Take(owner Owner, key string) *Bucket {
	if p == nil {
		return nil
	}
	for i := range p.NBuckets {
		b := &p.Buckets[i]
		if b.Owner == owner && b.Key == key && claim(b.Done, &b.claimed) {
			return b
		}
	}
	return nil
}

// Deposited claims owner's done deposit of (dest, client) in p, once,
// and reports whether there was one.
func (p *Plan) Deposited(owner Owner, dest, client string) bool {
	if p == nil || !p.HasDeposit {
		return false
	}
	d := &p.Deposit
	return d.Owner == owner && d.Dest == dest && d.Client == client && claim(d.Done, &d.claimed)
}

// claim reports whether a step is done and claimed now, by this caller:
// each done step is claimed once.
func claim(done bool, claimed *atomic.Bool) bool { return done && claimed.CompareAndSwap(false, true) }

// Unclaimed gives back, through its owner, each take p charged that no
// layer claimed. Call it once the request has returned.
func (p *Plan) Unclaimed(ctx context.Context) {
	for i := range p.NBuckets {
		b := &p.Buckets[i]
		if b.Wait == 0 && claim(b.Done, &b.claimed) {
			b.Owner.Unclaimed(ctx, b)
		}
	}
}

// Rate is a limit of n per period as a rate per second: the one
// conversion of ratelimit's Limits that a store applies.
func Rate(n int, period time.Duration) float64 { return float64(n) / period.Seconds() }
