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
// (portico.Identity.OperationID).
//
// # The key names the step
//
// After a fallback or a replay, another model writes other arguments for
// the same step (another wording, other optional fields). So the key of a
// step is what the application identifies, not what the model wrote:
//
//	execution_key = operation_id + step (+ tool name, ...)   [StepKey]
//
// and the arguments are recorded beside the claim as a fingerprint, the
// SHA-256 of their RFC 8785 canonical JSON ([Fingerprint]; the JSON
// Canonicalization Scheme, github.com/gowebpki/jcs, so {"b":1,"a":2} and
// {"a":2, "b":1.0} are the same arguments). [Runner.DoArgs] and [OnceArgs]
// run the step at most once: a caller whose arguments differ from those of
// the run that completed it gets that run's result, never a second run,
// with a Permanent error wrapping [ErrArgumentsDiffer] that says so (not a
// silent success). [NewKey] and [KeyOf] build argument-keyed keys,
//
//	execution_key = operation_id + tool_name + sha256(canonical JSON of the arguments)
//
// for effects whose identity is their arguments: other arguments are
// another effect, run again. The empty key is refused ([ErrKey]).
//
// A key is global to its store: nothing in it names the tenant. Where
// tenants choose their operation ids, put the tenant in the key, as
// StepKey(tenant, operationID, step) (each part is length-prefixed, so no
// two splits collide); otherwise one tenant's step that has the key of
// another's gets that run's result, and its own effect never runs.
//
// # States
//
// A key is [Pending] while one caller runs the effect, then [Completed]
// (with its result), [Failed] (the effect did not happen: retryable classes
// may run again, others are returned as recorded), or [Unknown]. A run
// refused locally before anything was sent (a portico Rejected error: an
// open breaker, a limiter) releases the key: the error is returned with its
// RetryAfter, and the next call runs the effect.
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
//
// # Store outage
//
// A store that fails while an effect runs (Redis stopped, a network cut)
// may still be failing when it completes. The owner, which knows the
// outcome, returns it to its caller (with an error wrapping ErrUnknown if
// a beat failed too: see Store loss) and keeps it, then writes it back
// every Config.Poll until the store takes it; the key stays Pending
// meanwhile, so other callers wait for it and then get the owner's
// outcome, not Unknown at the end of the lease. The write-back is bounded:
// one goroutine per Runner, started when an outcome is kept and ended
// when none is left (the same one that watches for a loss: see Store
// loss); one failed store operation per Poll while the store
// fails, whatever the number of outcomes kept; at most 1024 outcomes; each
// given up at its expiry (TTL after completion, the Lease for a released
// key), when the store would have forgotten it. A key another run took
// meanwhile (after a loss, or [Runner.Resolve]d past its lease) keeps that
// run's record. [Runner.Close] ends the write-back sooner. An outcome
// given up leaves its key Pending, then Unknown past its lease, to
// reconcile as any Unknown key.
//
// # A claim whose reply was lost
//
// Each attempt claims a key with a claim token it generates (the record's
// Owner). A claim resent with the same token, by the client's retries or by
// the Runner, is recognised by the store as the caller's own (see
// [Store.PutIfAbsent]). A claim the store did not answer may have landed:
// Do releases it if the store answers now, else remembers its token, and
// the next Do of the key in the same Runner claims with it and runs the
// effect. So a caller told that nothing ran ([ErrStore], Transient) can run
// it, instead of finding its own claim "pending elsewhere" for the lease
// and then Unknown.
//
// # Store loss
//
// A store that lost its records (Redis killed and restarted without
// persistence, FLUSHALL, a replica promoted before it had the last writes)
// must not be taken for one that never saw the key. What this package
// promises, on any Store:
//
//   - A caller that saw the key Pending in another run and then finds it
//     absent within that run's lease records it Unknown ([ReasonLost]) and
//     returns [ErrUnknown]; it does not run the effect.
//   - The owner of the lost run, which knows its outcome, writes it back
//     over an absent key or an Unknown record of ReasonLost, so later
//     callers get its result.
//   - The owner sends its claim again every Config.Poll while the effect
//     runs (a heartbeat, Record.Renew; the store recognises its own claim):
//     a store that lost the record gets it back.
//   - A Store that can tell it lost records (package redisstore does, with
//     a store epoch: see its documentation) refuses, for a quarantine
//     after it detects the loss, every claim to start a run of a key it
//     holds no record of: a Transient, NotSent error wrapping
//     [ErrQuarantined], RetryAfter when to look again; nothing is
//     run or stored, so the caller runs the step when it comes back. A
//     caller that saw the key pending keeps waiting instead. Beats and
//     outcomes written back are stored. The quarantine only has to outlast
//     one beat of every owner still running, and one write-back of the
//     outcomes Runners keep (below), not a Lease: its length is the
//     Store's (redisstore: Probe + 3 x (Poll + Timeout), 1.45 s with the
//     defaults, longer while a member's write-back is awaited: below),
//     and every Runner sharing a store must use the same Poll.
//   - So from the quarantine's end, a key whose run is under way, by an
//     owner that reached the store within the quarantine, is pending again
//     and never runs twice. An owner cut off from the store for longer
//     cannot write its claim back: another caller may run the key after
//     the quarantine; the owner then gets its result with an error
//     wrapping ErrUnknown (it finds the key taken when it records its
//     outcome, or, having missed a beat, cannot record it), so two runs
//     are never both reported as successes. The same holds if another
//     caller claimed the key after a loss the store did not detect,
//     before the owner's beat.
//   - A Runner over a Store that can tell it lost records ([LossWatcher]:
//     redisstore's) keeps its latest outcomes that say the effect may
//     have happened (Completed, Unknown): at most [Config.Keep] (1,024 by
//     default) and [MaxKeptBytes] (4 MiB) in all, the oldest dropped
//     first, each until its record expires. It asks the store every Poll
//     whether it lost records (one store operation per Poll while any is
//     kept) and, when it did, writes them back over absent keys, 16 at a
//     time, newest first; a key another run holds now keeps that run's
//     record. A claim refused in quarantine for a key whose outcome the
//     Runner keeps is answered from it.
//   - While it keeps outcomes, a Runner is a member of the store, for
//     [Config.Hold] (10 s) from its last ask ([Member]); after a loss
//     the quarantine lasts until every member has written back or its
//     Hold has run out. So a step completed before the loss, by a Runner
//     that reaches the store within its Hold, is back before another
//     caller could run it, and a caller in any instance gets its result,
//     not a second run. A Runner that writes back and finds its key run
//     again by another logs it and tells the observer of the call that
//     ran it ([portico.EventSharedStore], reason "effect:ran_twice").
//
// What a Runner cannot write back: an outcome whose Runner died with the
// store (its process gone, or [Runner.Close]d), was cut off from the
// store beyond its Hold, or no longer keeps it (beyond Keep or
// MaxKeptBytes). Such a record, lost, is absent after the quarantine: its
// step runs again when it is next asked for. Exactly once for those needs
// a store that loses no acknowledged write: for Redis, appendonly yes with
// appendfsync always, and a failover only to a replica that acknowledged
// every write (WAIT). What a loss costs without it: new steps are refused
// for the quarantine, and completed steps whose Runner is gone, or has
// dropped them, may run again.
package effect
