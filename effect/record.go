package effect

import (
	"context"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/enum"
)

// State is where an execution key stands: pending, completed, failed, or
// unknown after an ambiguous timeout.
type State uint8

// The states of an execution key.
const (
	// Pending: a runner holds the key and is running the effect, until
	// Record.Lease; after the lease the owner is presumed lost and the key is
	// treated as Unknown.
	Pending State = iota + 1
	// Completed: the effect ran; Record.Result is its result, returned to
	// every later caller instead of running it again.
	Completed
	// Failed: the effect failed in a way that says it did not take effect
	// (Record.Class). A retryable class (transient, rate limited) lets a later
	// caller run it again, and so does class Rejected: a run refused before
	// anything was sent, or a claim whose reply was lost, released, kept
	// for the Lease (see [Runner.Do]); any other class is returned as is.
	Failed
	// Unknown: the outcome is ambiguous (a timeout after the effect may have
	// started, a cancellation mid-run, a panic, a record the store lost:
	// Reason [ReasonLost]). The effect is not run again until the
	// application reconciles the key with [Runner.Resolve].
	Unknown
)

// ReasonLost is the Reason of an Unknown record written because the store
// lost the key's record, or may have: a caller found absent a key it had
// seen pending within its lease, or a Store found that it lost records (see
// Store loss in the package documentation). The owner of the lost run,
// which knows its outcome, replaces such a record with it.
const ReasonLost = "store lost the record"

// String returns "pending", "completed", "failed" or "unknown".
func (s State) String() string { return enum.Name(stateNames[:], s, "State") }

var stateNames = [...]string{Pending: "pending", Completed: "completed", Failed: "failed", Unknown: "unknown"}

// Record is what a [Store] keeps per execution key. Stores treat it as an
// opaque value apart from Owner, State and Expires; Result must not be
// modified once stored.
type Record struct {
	// State is the key's state.
	State State
	// Result is the effect's result when Completed (JSON text, for [Once]).
	Result []byte
	// Args is the [Fingerprint] of the arguments of the run that claimed the
	// key ([Runner.DoArgs]), empty for a run without ([Runner.Do]).
	Args string
	// Class is the error class of a Failed or Unknown outcome.
	Class portico.Class
	// Reason is a short, content-free reason for a Failed or Unknown outcome.
	Reason string
	// Owner is a random token of the run that created or last moved the
	// record (the claim token); [Store.Update] compares it.
	Owner string
	// Lease is, for a Pending record, when its owner is presumed lost.
	Lease time.Time
	// Expires is when the store may forget the record; an expired record is
	// absent, and so is one whose Expires is the zero time. The Runner always
	// sets it.
	Expires time.Time
	// Beat, on a Pending claim, is how often its owner sends the claim again
	// while the effect runs (the Runner's Config.Poll); zero elsewhere. A
	// Store that detects its own loss bounds its quarantine with it (see
	// Store loss in the package documentation). Stores need not keep it.
	Beat time.Duration
	// Renew marks a Pending claim sent again by the owner of a run under
	// way (its heartbeat), not a claim to start a run: a Store in
	// quarantine after a loss stores it. Stores need not keep it.
	Renew bool
}

// Store keeps execution records. Implementations must be safe for concurrent
// use, and make PutIfAbsent and Update atomic: they are what makes an effect
// run at most once. A Store shared by several processes (Redis, a SQL table)
// gives the guarantee across them; [MemoryStore] within one process.
// Records whose Expires has passed count as absent everywhere.
type Store interface {
	// Get returns the record of key and true, or false when there is none
	// (or it expired).
	Get(ctx context.Context, key Key) (Record, bool, error)
	// PutIfAbsent stores rec under key when key has no record, returning rec
	// and true; otherwise it returns the existing record and false. A claim
	// resent after its reply was lost is its own: when the stored record is
	// Pending with rec's Owner (the caller's claim token), PutIfAbsent
	// replaces it with rec and returns rec and true. A Store that detects
	// that it lost records may refuse, for a quarantine, a Pending rec that
	// is not Renew on an absent key: it stores nothing and returns an error
	// wrapping [ErrQuarantined], a *portico.Error whose RetryAfter is when
	// to look again (see Store loss in the package documentation).
	PutIfAbsent(ctx context.Context, key Key, rec Record) (Record, bool, error)
	// Update replaces key's record with next only when the stored record has
	// the same Owner and State as prev (compare-and-swap), reporting whether
	// it did.
	Update(ctx context.Context, key Key, prev, next Record) (bool, error)
}

// sameClaim reports whether r and o are one owner's records in one state.
func (r Record) sameClaim(o Record) bool { return r.Owner == o.Owner && r.State == o.State }
