// Package effect makes a tool's side effect run at most once per execution
// key, so that retrying a generation, falling back to another model or
// replaying an agent step never charges a card, sends an email or opens a
// ticket twice.
//
// Package retry and package fallback repeat a generation whose outcome is
// unknown by default (see portico.Request.NoAmbiguousRetry): that is safe
// only because a generation has no effect besides its cost, and every effect
// the model asks for goes through this package.
//
// Retrying the generation and repeating the action are separate decisions:
// the action is made idempotent with a key, as payment APIs do (Stripe's
// idempotency keys; AWS Builders' Library, "Making retries safe with
// idempotent APIs"). The application gives each user-level operation an id
// (portico.Identity.OperationID); each tool call the model asks for gets the
// execution key
//
//	execution_key = operation_id + tool_name + sha256(canonical JSON of the arguments)
//
// built by [NewKey] or [KeyOf]. Canonical JSON is RFC 8785's JSON
// Canonicalization Scheme (github.com/gowebpki/jcs), so {"b":1,"a":2} and
// {"a":2, "b":1.0} are the same call.
//
// # States
//
// A key is [Pending] while one caller runs the effect, then [Completed]
// (with its result), [Failed] (the effect did not happen: retryable classes
// may run again, others are returned as recorded), or [Unknown]. A run
// refused locally before anything was sent (a portico Rejected error: an
// open breaker, a limiter) leaves no record: the key is released, the error
// returned with its RetryAfter, and the next call runs the effect.
//
// The class of the effect's error ([portico.ClassOf]) is its testimony about
// what happened: Rejected proves nothing was sent (the key is released);
// Transient and RateLimited say the effect did not happen and may be tried
// again (the next Do runs it); Permanent (also any error that is not a
// *portico.Error), Incompatible, InvalidResponse and Unusable say it did not
// happen and would fail again, so the key is kept Failed and not run again
// for the TTL. The runner cannot check that testimony (a layer's Transient
// "not sent" and a provider's 503 look the same), so an effect that may have
// reached the other side must report Ambiguous.
//
// Unknown answers the ambiguous timeout: when the call may have reached the
// other side before failing (a portico Ambiguous error, a deadline or
// cancellation during the run, a panic, which goes on, or a pending key whose
// owner's lease ran out), "nothing happened" is not assumed. The key is not
// run again; callers get an Ambiguous error wrapping [ErrUnknown] until the
// application reconciles it, asking the other side, and records what it
// learned with [Runner.Resolve].
//
// # Running
//
// A [Runner] ([New], [Config]) runs effects through a [Store]. [Runner.Do]
// takes the effect as func(ctx) ([]byte, error); [Once] is the typed form,
// storing the result as JSON. Callers of the same key in one process share
// one run, like golang.org/x/sync/singleflight, each honouring its own
// context while waiting; a completed key returns the stored result; a key
// pending in another process (a shared store) is polled.
//
// # Stores
//
// [Store] is three atomic operations: Get, PutIfAbsent and Update (a
// compare-and-swap on the record's owner and state), each record carrying its
// expiry. [MemoryStore] is the in-process default, bounded, dropping expired
// records, and refusing new keys with [ErrFull] rather than evicting live
// ones. At-most-once across several processes needs a shared store behind
// the same interface: package redisstore keeps the records in Redis, each
// expiring with its record. A store that fails runs nothing (a Transient
// error wrapping [ErrStore]) and reports a [portico.EventSharedStore].
package effect
