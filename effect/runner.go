package effect

import (
	"bytes"
	"cmp"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// Sentinels of the errors a [Runner] returns, wrapped in a *portico.Error so
// that errors.Is finds them and portico.ClassOf classifies them.
var (
	// ErrUnknown: the key's outcome is unknown (an ambiguous timeout, a
	// cancellation or panic mid-run, or a pending key whose owner's lease
	// ran out). The effect may have happened; the runner will not run it
	// again until the application reconciles the key with [Runner.Resolve]
	// (a key found Completed by then reconciles as Happened: its owner's
	// outcome reached the store after all). Class Ambiguous.
	ErrUnknown = errors.New("effect: outcome unknown, reconcile before running again")
	// ErrFailed: the key's effect failed earlier with a non-retryable class,
	// which the error carries; it is not run again.
	ErrFailed = errors.New("effect: failed earlier")
	// ErrStore: the store failed; nothing was run. Class Transient.
	ErrStore = errors.New("effect: store error")
	// ErrQuarantined: the store lost records a moment ago and refuses to
	// start runs of keys it holds no record of until every run under way
	// has written its claim back (see Store loss in the package
	// documentation); nothing was run or stored. Class Transient, NotSent,
	// with RetryAfter when to look again: the quarantine's time left, or
	// a Poll while only a member's write-back is awaited (see [Member]).
	ErrQuarantined = errors.New("effect: store recovering from a loss of records")
	// ErrNotResolvable: Resolve was called on a key that is absent, or
	// neither Unknown nor Pending past its lease. Class Permanent.
	ErrNotResolvable = errors.New("effect: key is not unknown")
	// ErrArgumentsDiffer: [Runner.DoArgs] found the step already run (or
	// failed) with other arguments; the effect was not run again, and the
	// step's recorded result comes with the error. Class Permanent.
	ErrArgumentsDiffer = errors.New("effect: step ran with other arguments")
)

// maxUnsure bounds the claims a Runner remembers whose reply was lost.
const maxUnsure = 1024

// maxUnwritten bounds the outcomes a Runner keeps to write back.
const maxUnwritten = 1024

// Defaults of [Config].
const (
	DefaultTTL   = 24 * time.Hour
	DefaultLease = 5 * time.Minute
	DefaultPoll  = 100 * time.Millisecond
	DefaultHold  = 10 * time.Second
)

// Config configures a [Runner].
type Config struct {
	// Store keeps the records. Nil means a new MemoryStore with default
	// MemoryConfig (at-most-once within this process only).
	Store Store
	// TTL is how long an outcome is remembered, so how long a repeated call
	// with the same key returns the stored result instead of running again.
	// A pending key is kept for Lease + TTL, so that a lost owner's key reads
	// as Unknown for a TTL after its lease. Zero means DefaultTTL (24 hours).
	TTL time.Duration
	// Lease is how long a pending key is trusted to be running. A caller that
	// finds a key pending past its lease treats it as Unknown (the owner
	// crashed or hangs); so Lease must exceed the effect's longest run. Zero
	// means DefaultLease (5 minutes).
	Lease time.Duration
	// Poll is how often a caller waiting on a key pending in another process
	// (a shared store) looks again, and how often the caller running an
	// effect sends its claim again (see Store loss in the package
	// documentation): one store operation per Poll per effect under way. A
	// store that detects a loss of its records bounds its quarantine with
	// it, so every Runner sharing a store should use the same Poll.
	// Callers in the same process wait for the running call directly. Zero
	// means DefaultPoll (100 ms).
	Poll time.Duration
	// Keep is how many of its latest outcomes that say the effect may
	// have happened (Completed, Unknown) a Runner keeps, each until its
	// record expires, over a [LossWatcher] store, to write them back when
	// the store loses them (see Store loss in the package documentation):
	// memory at most Keep x (256 bytes + the key, result and fingerprint),
	// and never more than MaxKeptBytes in all; the oldest go first. Zero
	// means DefaultKeep (1,024); negative keeps none.
	Keep int
	// Hold is, over a [LossWatcher] store, how long after this Runner last
	// asked the store, every Poll while it keeps outcomes, a loss of
	// records waits for its write-back: claims of keys the store holds no
	// record of are refused until every such Runner has written back or
	// its Hold has run out (see Store loss in the package documentation).
	// So a step of a Runner whose link is slow or cut for less than Hold
	// is written back before any other Runner runs it; one cut off longer
	// may run twice. Zero means DefaultHold (10 s).
	Hold time.Duration
	// Logger receives a warning when an outcome could not be recorded at
	// once, and when one is given up (see Store outage in the package
	// documentation). Nil discards.
	Logger *slog.Logger
}

// Runner runs each tool side effect at most once per execution [Key], so
// that retrying a generation never repeats its effects. Concurrent callers
// with the same key share one run, like singleflight; later callers get the
// stored result of a completed run; an ambiguous outcome is recorded as
// Unknown and never silently re-run. A Runner is safe for concurrent use.
// [Runner.Close] ends the write-back of outcomes the store did not take,
// and, over a [LossWatcher], the watch for a loss of records.
type Runner struct {
	store Store
	ttl   time.Duration
	lease time.Duration
	poll  time.Duration
	hold  time.Duration
	id    string // the Runner's Member.ID
	log   *slog.Logger

	mu      sync.Mutex
	flights map[Key]*flight
	// unsure holds the claim token of each key whose claim may have landed
	// although the store's reply was lost: the next Do of the key claims it
	// with the same token, which the store recognises as its own.
	unsure map[Key]string
	// unwritten holds the outcomes the store did not take, which one
	// goroutine (writing) writes back every Poll; Close ends it.
	unwritten map[Key]unwritten
	writing   bool
	closed    bool
	// watch is the store, when it can tell a loss of records: the
	// write-back loop then asks it every Poll while outcomes are kept,
	// and writes kept back when it lost some (rewrite).
	watch   LossWatcher
	kept    keptSet
	losses  uint64 // the store's count of losses at its last answer
	counted bool   // losses holds an answer
	written uint64 // losses when every kept outcome was last written back
	member  bool   // the store counts this Runner a member (it asked)
	rewrite bool
	ctx     context.Context // canceled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// unwritten is an outcome next of the run that claimed its key with mine,
// which the store did not take.
type unwritten struct{ mine, next Record }

// flight is one run in this process that other callers of the key wait for.
type flight struct {
	done   chan struct{}
	args   string // the leader's arguments' fingerprint
	result []byte
	err    error
	again  bool // the leader gave up for its own reasons: waiters try themselves
}

// New returns a Runner for cfg. It returns an error starting with "effect:"
// for a negative duration.
func New(cfg Config) (*Runner, error) {
	for _, d := range []struct {
		name string
		p    *time.Duration
		def  time.Duration
	}{{"TTL", &cfg.TTL, DefaultTTL}, {"Lease", &cfg.Lease, DefaultLease}, {"Poll", &cfg.Poll, DefaultPoll}, {"Hold", &cfg.Hold, DefaultHold}} {
		if *d.p < 0 {
			return nil, errors.New("effect: Config." + d.name + " is negative")
		}
		*d.p = cmp.Or(*d.p, d.def)
	}
	if cfg.Store == nil {
		s, _ := NewMemoryStore(MemoryConfig{})
		cfg.Store = s
	}
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	watch, _ := cfg.Store.(LossWatcher)
	return &Runner{store: cfg.Store, ttl: cfg.TTL, lease: cfg.Lease, poll: cfg.Poll, hold: cfg.Hold, id: rand.Text(), log: log, flights: map[Key]*flight{}, unsure: map[Key]string{},
		unwritten: map[Key]unwritten{}, ctx: ctx, cancel: cancel, watch: watch, kept: keptSet{max: cmp.Or(cfg.Keep, DefaultKeep), order: list.New(), at: map[Key]*list.Element{}}}, nil
}

// Do runs fn at most once for key and returns its result: a Completed
// key's stored result without running fn, a run under way's outcome once it
// ends, or else fn's, run under a claim and recorded by the class of fn's
// error (States in the package documentation). The bytes are the caller's
// copy. Do records no arguments: for a [StepKey], use [Runner.DoArgs].
//
// Errors: fn's own error for a run that failed or was Rejected; an
// Ambiguous *portico.Error wrapping [ErrUnknown] for an Unknown key (with
// fn's result when this run's record may have been lost: Store loss in the
// package documentation); the recorded class wrapping [ErrFailed] for a key
// that failed earlier; Transient wrapping [ErrStore] when the store fails,
// or NotSent wrapping [ErrQuarantined] with a RetryAfter after a loss of
// its records (fn not run); Permanent wrapping [ErrKey] for the empty key;
// the context's error when ctx ends before fn runs. A panic in fn leaves
// key Unknown and goes on; a nil fn panics.
func (r *Runner) Do(ctx context.Context, key Key, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	return r.do(ctx, key, "", fn)
}

// DoArgs is [Runner.Do] for a step whose key does not hold the arguments
// ([StepKey]): args, the arguments of this attempt at the step, are
// recorded as their [Fingerprint] with the claim. A caller whose arguments
// differ from those of the run that completed the step gets that run's
// result, not a second run, with a Permanent *portico.Error wrapping
// [ErrArgumentsDiffer] (a key that failed earlier gives its error wrapping
// both [ErrFailed] and ErrArgumentsDiffer). Invalid JSON in args is a
// Permanent error wrapping [ErrArguments], before anything is claimed.
func (r *Runner) DoArgs(ctx context.Context, key Key, args json.RawMessage, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	fp, err := Fingerprint(args)
	if err != nil {
		return nil, err
	}
	return r.do(ctx, key, fp, fn)
}

func (r *Runner) do(ctx context.Context, key Key, fp string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	if key == "" {
		return nil, emptyKey()
	}
	if fn == nil {
		// Fail before the key is claimed: a nil fn claimed as Pending would
		// panic and leave the key Unknown for good.
		panic("effect: Do of a nil func")
	}
	for {
		r.mu.Lock()
		if f, ok := r.flights[key]; ok {
			r.mu.Unlock()
			if res, err, again := f.wait(ctx, fp); !again {
				return res, err
			}
			continue
		}
		f := &flight{done: make(chan struct{}), args: fp}
		r.flights[key] = f
		r.mu.Unlock()

		res, err := r.lead(ctx, key, fp, fn, f)
		return bytes.Clone(res), err
	}
}

// wait returns f's outcome, for a caller whose arguments' fingerprint is
// fp, once f is done, or ctx's error if it ends first; again when the
// caller must try itself.
func (f *flight) wait(ctx context.Context, fp string) (res []byte, err error, again bool) {
	select {
	case <-f.done:
		return f.outcome(fp)
	case <-ctx.Done():
		return nil, portico.FromContext(ctx), false
	}
}

// outcome is done f's outcome for a caller whose arguments' fingerprint is
// fp, the caller's copy; again when the caller must try itself.
func (f *flight) outcome(fp string) (res []byte, err error, again bool) {
	if f.again {
		return nil, nil, true
	}
	if f.err == nil && differ(fp, f.args) {
		return bytes.Clone(f.result), argsDiffer(nil), false
	}
	return bytes.Clone(f.result), f.err, false
}

// differ reports whether a caller's arguments' fingerprint fp differs from
// the recorded one: both known and unequal.
func differ(fp, recorded string) bool { return fp != "" && recorded != "" && fp != recorded }

func argsDiffer(failed *portico.Error) error {
	if failed != nil {
		return &portico.Error{Class: failed.Class, Reason: failed.Reason, Err: portico.Join(ErrFailed, ErrArgumentsDiffer)}
	}
	return &portico.Error{Class: portico.Permanent, Reason: "step ran with other arguments", Err: ErrArgumentsDiffer}
}

func emptyKey() error {
	return &portico.Error{Class: portico.Permanent, Reason: "empty execution key", Err: ErrKey}
}

// finish publishes f's outcome to its waiters and retires it.
func (r *Runner) finish(key Key, f *flight) {
	r.mu.Lock()
	delete(r.flights, key)
	r.mu.Unlock()
	close(f.done)
}

// lead settles key as the process's one caller of it, and publishes the
// outcome to f's waiters (also when fn panics).
func (r *Runner) lead(ctx context.Context, key Key, fp string, fn func(context.Context) ([]byte, error), f *flight) (res []byte, err error) {
	returned := false
	defer func() {
		if !returned { // fn panicked: run recorded Unknown; the panic goes on.
			res, err = nil, unknownError("panic", nil)
		}
		f.result, f.err = res, err
		r.finish(key, f)
	}()
	res, err = r.settle(ctx, key, fp, fn, f)
	returned = true
	return res, err
}

// settle claims key for this caller and runs fn, or answers from the
// key's record, looking again while another run holds it.
func (r *Runner) settle(ctx context.Context, key Key, fp string, fn func(context.Context) ([]byte, error), f *flight) ([]byte, error) {
	// owner: the token of this Runner's claim whose reply was lost, or new.
	owner, unsure := r.takeUnsure(key)
	seen := false // the key was seen pending in another run, within its lease
	for {
		if err := portico.Gone(ctx); err != nil {
			// Never claim for a caller that has gone: fn's failure would
			// read as Unknown although nothing ran.
			r.keepUnsureIf(unsure, key, owner)
			f.again = true
			return nil, err
		}
		now := time.Now()
		// A pending record outlives its lease by the TTL, so that a lost
		// owner's key reads as Unknown for that long rather than vanishing
		// (and running again) when the lease ends.
		mine := Record{State: Pending, Args: fp, Owner: owner, Lease: now.Add(r.lease), Expires: now.Add(mono.Add(r.lease, r.ttl)), Beat: r.poll}
		cur, stored, serr := r.store.PutIfAbsent(ctx, key, mine)
		switch {
		case errors.Is(serr, ErrQuarantined):
			r.keepUnsureIf(unsure, key, owner)
			if res, err, again := r.quarantined(ctx, key, fp, f, serr, seen); !again {
				return res, err
			}
			continue
		case serr != nil || stored:
			return r.claimed(ctx, key, mine, fn, serr, seen)
		}
		res, err, again := r.found(ctx, key, cur, mine, fn, f)
		if !again {
			return res, err
		}
		seen = seen || cur.State == Pending
	}
}

// claimed acts on the store's answer to the claim mine, which it stored
// (serr nil) or could not decide: runs fn, unless the key was seen pending
// in another run (seen), or fails.
func (r *Runner) claimed(ctx context.Context, key Key, mine Record, fn func(context.Context) ([]byte, error), serr error, seen bool) ([]byte, error) {
	switch {
	case serr != nil:
		return nil, r.claimFailed(ctx, key, mine, serr)
	case seen:
		// Pending elsewhere a moment ago, absent now within its lease:
		// the store lost it, and that run may be under way.
		r.record(ctx, key, mine, Record{State: Unknown, Class: portico.Ambiguous, Reason: ReasonLost})
		return nil, unknownError(ReasonLost, nil)
	}
	return r.run(ctx, key, mine, fn)
}

// quarantined answers a claim refused during a loss's quarantine: a caller
// that saw the key pending waits a Poll and looks again; any other gets
// this Runner's kept outcome, or the refusal.
func (r *Runner) quarantined(ctx context.Context, key Key, fp string, f *flight, serr error, seen bool) (res []byte, err error, again bool) {
	r.lost()
	if !seen {
		res, err = r.refused(key, fp, f, serr)
		return res, err, false
	}
	return r.later(ctx, f)
}

// found settles key, claimed by another run as cur: it answers from cur,
// runs fn in its place (a retryable failure), or asks the caller to look
// again (again) after a Poll when cur is pending within its lease, or at
// once when it moved meanwhile.
func (r *Runner) found(ctx context.Context, key Key, cur, mine Record, fn func(context.Context) ([]byte, error), f *flight) (res []byte, err error, again bool) {
	switch {
	case cur.State == Pending:
		if !time.Now().Before(cur.Lease) {
			return nil, unknownError("pending past its lease", nil), false
		}
		return r.later(ctx, f)
	case cur.State == Failed && rerunnable(cur.Class):
		return r.rerun(ctx, key, cur, mine, fn)
	}
	res, err = r.answer(cur, mine.Args, f)
	return res, err, false
}

// rerun claims key, Failed as cur with a class that may run again, with
// mine and runs fn; again when someone moved the record first.
func (r *Runner) rerun(ctx context.Context, key Key, cur, mine Record, fn func(context.Context) ([]byte, error)) (res []byte, err error, again bool) {
	ok, serr := r.store.Update(ctx, key, cur, mine)
	if serr != nil {
		return nil, r.claimFailed(ctx, key, mine, serr), false
	}
	if !ok {
		return nil, nil, true // someone moved the record first: look again
	}
	res, err = r.run(ctx, key, mine, fn)
	return res, err, false
}

// answer returns the outcome that rec, key's Completed, Unknown or Failed
// record, gives a caller whose arguments' fingerprint is fp.
func (r *Runner) answer(rec Record, fp string, f *flight) ([]byte, error) {
	switch rec.State {
	case Completed:
		if differ(fp, rec.Args) {
			f.again = true // this caller's arguments, not the waiters': they look themselves
			return rec.Result, argsDiffer(nil)
		}
		return rec.Result, nil
	case Unknown:
		return nil, unknownError(rec.Reason, nil)
	}
	failed := &portico.Error{Class: rec.Class, Reason: rec.Reason, Err: ErrFailed}
	if differ(fp, rec.Args) {
		f.again = true
		return nil, argsDiffer(failed)
	}
	return nil, failed
}

// refused answers a claim the store refused while it quarantines a loss:
// from this Runner's kept outcome of key (the write-back restores it), or
// with the store's refusal.
func (r *Runner) refused(key Key, fp string, f *flight, serr error) ([]byte, error) {
	if rec, ok := r.fromKept(key); ok {
		return r.answer(rec, fp, f)
	}
	return nil, quarantined(serr)
}

// later waits a Poll and asks to look again, or returns ctx's error when
// it ends first (f's waiters then try themselves).
func (r *Runner) later(ctx context.Context, f *flight) (res []byte, err error, again bool) {
	t := time.NewTimer(r.poll)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, nil, true
	case <-ctx.Done():
		f.again = true
		return nil, portico.FromContext(ctx), false
	}
}

// quarantined returns the error of a claim the store refused while it
// quarantines a loss: Transient, NotSent, with the store's RetryAfter (the
// store's error says nothing more).
func quarantined(err error) error {
	var after time.Duration
	var pe *portico.Error
	if errors.As(err, &pe) {
		after = pe.RetryAfter
	}
	return &portico.Error{Class: portico.Transient, Reason: "claim refused", RetryAfter: after, NotSent: true, Err: ErrQuarantined}
}

// heartbeat resends the claim mine, marked Renew, every Poll until stop
// (which waits for a send under way), so that a store that lost the record
// gets it back, even in quarantine. stop reports whether a beat failed.
func (r *Runner) heartbeat(ctx context.Context, key Key, mine Record) (stop func() (missed bool)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Bool
	ctx = context.WithoutCancel(ctx)
	mine.Renew = true
	wg.Go(func() {
		t := time.NewTicker(r.poll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if _, _, err := r.store.PutIfAbsent(ctx, key, mine); err != nil {
					failed.Store(true)
				}
			}
		}
	})
	return func() bool {
		close(done)
		wg.Wait()
		return failed.Load()
	}
}

// claimFailed returns the error of a claim the store did not answer (it
// may have landed): nothing ran, so the claim is released, or, while the
// store fails, its token is kept for the key's next Do to claim with.
func (r *Runner) claimFailed(ctx context.Context, key Key, mine Record, err error) error {
	next := r.released(mine, "claim not confirmed")
	if _, uerr := r.store.Update(context.WithoutCancel(ctx), key, mine, next); uerr != nil {
		r.keepUnsure(key, mine.Owner)
	}
	return r.storeFailed(ctx, err)
}

// takeUnsure returns the token of key's claim whose reply was lost, and
// forgets it, with true, or a new token and false.
func (r *Runner) takeUnsure(key Key) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.unsure[key]; ok {
		delete(r.unsure, key)
		return t, true
	}
	return rand.Text(), false
}

// keepUnsureIf remembers token as key's claim whose reply was lost when
// unsure: the claim this attempt made with it is still unconfirmed.
func (r *Runner) keepUnsureIf(unsure bool, key Key, token string) {
	if unsure {
		r.keepUnsure(key, token)
	}
}

// completed records res, and returns an Unknown error when the effect may
// have run twice: another run claimed the key after a loss, or neither the
// heartbeat (missed) nor the record reached the store.
func (r *Runner) completed(ctx context.Context, key Key, mine Record, res []byte, missed bool) error {
	taken, rerr := r.record(ctx, key, mine, Record{State: Completed, Result: bytes.Clone(res)})
	switch {
	case taken:
		return unknownError("another run claimed the key after the store lost its record; the effect may have run again", nil)
	case rerr != nil && missed:
		return unknownError("the store confirmed neither this run's claim nor its outcome, written back later; another run may have run it", nil)
	}
	return nil
}

// keepUnsure remembers token as key's claim whose reply was lost, up to
// maxUnsure keys (beyond, the claim waits out its lease: safe).
func (r *Runner) keepUnsure(key Key, token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.unsure[key]; ok || len(r.unsure) < maxUnsure {
		r.unsure[key] = token
	}
}

// run runs fn under the Pending record mine and records its outcome.
func (r *Runner) run(ctx context.Context, key Key, mine Record, fn func(context.Context) ([]byte, error)) (res []byte, err error) {
	stop := r.heartbeat(ctx, key, mine)
	panicked := true
	defer func() {
		if panicked {
			stop()
			r.record(ctx, key, mine, Record{State: Unknown, Class: portico.Ambiguous, Reason: "panic"})
		}
	}()
	res, err = fn(ctx)
	panicked = false
	missed := stop()
	if err == nil {
		return res, r.completed(ctx, key, mine, res, missed)
	}
	return nil, r.failed(ctx, key, mine, err)
}

// failed records fn's error err under the claim mine by its class, and
// returns the caller's error: Unknown's for an outcome nobody knows; err
// itself for a Rejected run, whose key is released, and for any other.
func (r *Runner) failed(ctx context.Context, key Key, mine Record, err error) error {
	class := portico.ClassOf(err)
	reason := reasonOf(err, class)
	switch class {
	case portico.Ambiguous, portico.Deadline, portico.Canceled:
		r.record(ctx, key, mine, Record{State: Unknown, Class: class, Reason: reason})
		return unknownError(reason, err)
	case portico.Rejected:
		// Refused before anything was sent: the next Do runs the effect.
		r.release(ctx, key, mine, reason)
		return err
	}
	r.record(ctx, key, mine, Record{State: Failed, Class: class, Reason: reason})
	return err
}

// released is the record that releases claim mine for reason: Rejected,
// so the key may run again, kept for a lease so that a release is not
// taken for a loss.
func (r *Runner) released(mine Record, reason string) Record {
	return Record{State: Failed, Class: portico.Rejected, Reason: reason, Args: mine.Args, Owner: mine.Owner, Expires: time.Now().Add(r.lease)}
}

// release gives key, claimed by mine, back (see released): not dropped, so
// that a caller that saw it pending does not read it as lost.
func (r *Runner) release(ctx context.Context, key Key, mine Record, reason string) {
	next := r.released(mine, reason)
	ok, _, err := r.write(context.WithoutCancel(ctx), key, mine, next)
	switch {
	case err != nil:
		r.keepUnwritten(key, mine, next, err)
	case !ok:
		r.log.Warn("effect: key not released", "key", string(key), "moved", true)
	}
}

// rerunnable reports whether a key Failed with class c may run again:
// retryable, or Rejected before anything was sent.
func rerunnable(c portico.Class) bool { return c.Retryable() || c == portico.Rejected }

// record moves key from mine to next under a context that outlives the
// caller's; taken reports that another run claimed the key after the store
// lost mine. An outcome the store fails to take is written back later.
func (r *Runner) record(ctx context.Context, key Key, mine, next Record) (taken bool, err error) {
	next.Owner = mine.Owner
	next.Args = mine.Args
	next.Expires = time.Now().Add(r.ttl)
	ok, taken, err := r.write(context.WithoutCancel(ctx), key, mine, next)
	if err != nil || ok {
		r.keep(ctx, key, next)
	}
	switch {
	case err != nil:
		r.keepUnwritten(key, mine, next, err)
	case !ok:
		// Another run holds the key, or someone resolved it.
		r.log.Warn("effect: outcome not recorded", "key", string(key), "state", next.State.String(), "moved", true)
	}
	return taken, err
}

// write moves key from mine to next, or writes next back over a record
// the store lost (restore).
func (r *Runner) write(ctx context.Context, key Key, mine, next Record) (ok, taken bool, err error) {
	ok, err = r.store.Update(ctx, key, mine, next)
	if err == nil && !ok {
		ok, taken, err = r.restore(ctx, key, next)
	}
	return ok, taken, err
}

// keepUnwritten keeps next, key's outcome the store failed to take, for
// the write-back; beyond maxUnwritten keys or after Close it is given up
// (the key reads Unknown after its lease, for the application to reconcile).
func (r *Runner) keepUnwritten(key Key, mine, next Record, err error) {
	r.mu.Lock()
	_, had := r.unwritten[key]
	kept := !r.closed && (had || len(r.unwritten) < maxUnwritten)
	if kept {
		r.unwritten[key] = unwritten{mine: mine, next: next}
		r.startWriting()
	}
	r.mu.Unlock()
	msg := "effect: outcome not recorded, writing it back"
	if !kept {
		msg = "effect: outcome not recorded"
	}
	r.log.Warn(msg, "key", string(key), "state", next.State.String(), "err", err)
}

// startWriting starts the write-back loop unless it runs, or the Runner
// is closed. r.mu is held.
func (r *Runner) startWriting() {
	if !r.writing && !r.closed {
		r.writing = true
		r.wg.Go(r.writeBack)
	}
}

// writeBack, every Config.Poll until nothing is left to write or watch or
// Close is called, writes the unwritten outcomes, and the kept ones when
// the store lost records.
func (r *Runner) writeBack() {
	t := time.NewTicker(r.poll)
	defer t.Stop()
	ask := r.watch != nil // a member from its first kept outcome: ask at once
	for ask || r.waitPoll(t) {
		ask = false
		if r.watch != nil && r.watchLosses() {
			r.writeKept()
		}
		if !r.writeUnwritten() {
			return
		}
	}
	r.leaveIfMember()
	r.mu.Lock()
	r.writing = false
	r.mu.Unlock()
}

// waitPoll waits for t's next tick; false when the Runner is closed first.
func (r *Runner) waitPoll(t *time.Ticker) bool {
	select {
	case <-r.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// writeUnwritten tries each unwritten outcome once, stopping at the first
// store error (one failure a Poll tells when the store is back), and drops
// it once written, moved or expired. It reports whether any are left.
func (r *Runner) writeUnwritten() (left bool) {
	r.mu.Lock()
	todo := maps.Clone(r.unwritten)
	r.mu.Unlock()
	failing := false
	for key, u := range todo {
		ok, expired := false, !time.Now().Before(u.next.Expires)
		if !expired {
			if failing {
				continue
			}
			var err error
			if ok, _, err = r.write(r.ctx, key, u.mine, u.next); err != nil {
				failing = true
				continue
			}
		}
		r.dropUnwritten(key, u, ok, expired)
	}
	return r.stillWriting()
}

// stillWriting reports whether outcomes are left to write back (unwritten,
// or kept for a loss) and r is open; if not, the Runner leaves the
// store's members, then (unless an outcome was kept meanwhile) it clears
// writing: no other loop starts before it has left.
func (r *Runner) stillWriting() bool {
	if !r.idle() {
		return true
	}
	r.leaveIfMember()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.idleLocked() {
		r.writing = false
		return false
	}
	return true
}

// idle reports whether nothing is left to write back, or r is closed.
func (r *Runner) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idleLocked()
}

func (r *Runner) idleLocked() bool {
	return len(r.unwritten) == 0 && r.kept.order.Len() == 0 || r.closed
}

// dropUnwritten forgets u, key's unwritten outcome, unless a newer run's
// replaced it, and logs whether it was written (ok), expired or moved.
func (r *Runner) dropUnwritten(key Key, u unwritten, ok, expired bool) {
	r.mu.Lock()
	if cur, still := r.unwritten[key]; still && cur.mine.Owner == u.mine.Owner {
		delete(r.unwritten, key)
	}
	r.mu.Unlock()
	switch {
	case ok:
		r.log.Info("effect: outcome written back", "key", string(key), "state", u.next.State.String())
	case expired:
		r.log.Warn("effect: outcome not recorded before its expiry", "key", string(key), "state", u.next.State.String())
	default:
		r.log.Warn("effect: outcome not recorded", "key", string(key), "state", u.next.State.String(), "moved", true)
	}
}

// Close ends the write-back of the outcomes the store did not take (see
// Store outage in the package documentation) and the watch for a loss of
// records (Store loss), waiting for a write under way, and returns nil.
// The loop runs only while such an outcome is kept (over a [LossWatcher],
// also while outcomes are kept for a loss: up to the TTL after the last
// one), and ends by itself when none is left, so call Close when the
// application stops using the Runner. After Close the Runner still runs
// effects, but an outcome the store does not take at once is given up
// (its key reads Pending, then Unknown), and none is written back after a
// loss. Close is safe to call more than once.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	return nil
}

// restore writes next back when the compare-and-swap from its Pending
// record failed: over an absent key or a [ReasonLost] record, or finds it
// applied already (a lost reply). taken reports another run holds the key.
func (r *Runner) restore(ctx context.Context, key Key, next Record) (ok, taken bool, err error) {
	cur, stored, err := r.store.PutIfAbsent(ctx, key, next)
	if err != nil || stored {
		return stored, false, err
	}
	switch {
	case cur.sameClaim(next):
		return true, false, nil
	case cur.State == Unknown && cur.Reason == ReasonLost:
		ok, err = r.store.Update(ctx, key, cur, next)
		return ok, false, err
	}
	return false, cur.Owner != next.Owner, nil
}

// Status returns key's record and true, or false when the key is absent (or
// expired). It returns a Transient *portico.Error wrapping [ErrStore] when the
// store fails, and a Permanent one wrapping [ErrKey] for the empty key.
func (r *Runner) Status(ctx context.Context, key Key) (Record, bool, error) {
	if key == "" {
		return Record{}, false, emptyKey()
	}
	rec, ok, err := r.store.Get(ctx, key)
	if err != nil {
		return Record{}, false, storeError(err)
	}
	return rec, ok, nil
}

// Outcome is what the application learned when it reconciled an Unknown key
// (for instance by asking the payment provider whether the charge exists).
type Outcome struct {
	// Happened reports that the effect took place; Result is then stored as
	// its result and returned to later callers. When false, the key becomes
	// Failed with a retryable class, and the next [Runner.Do] runs the effect.
	Happened bool
	// Result is the effect's result when Happened.
	Result []byte
}

// Resolve records the reconciled outcome of key, which must be Unknown or
// Pending past its lease; for a key Completed meanwhile (an owner told
// ErrUnknown whose outcome reached the store after all), Happened returns
// nil and keeps the stored result. It returns a Permanent *portico.Error
// wrapping [ErrNotResolvable] otherwise, or when the record changed meanwhile, one
// wrapping [ErrKey] for the empty key, and a Transient one wrapping
// [ErrStore] when the store fails.
func (r *Runner) Resolve(ctx context.Context, key Key, o Outcome) error {
	if key == "" {
		return emptyKey()
	}
	cur, ok, err := r.store.Get(ctx, key)
	if err != nil {
		return storeError(err)
	}
	if ok && cur.State == Completed && o.Happened {
		return nil // its owner's outcome reached the store after all
	}
	if !ok || !resolvable(cur, time.Now()) {
		return &portico.Error{Class: portico.Permanent, Reason: "key not unknown", Err: ErrNotResolvable}
	}
	return r.resolve(ctx, key, cur, o)
}

// resolve moves key from its record cur to o's, for Resolve.
func (r *Runner) resolve(ctx context.Context, key Key, cur Record, o Outcome) error {
	next := o.record(time.Now().Add(r.ttl))
	ok, err := r.store.Update(ctx, key, cur, next)
	if err != nil {
		return storeError(err)
	}
	if !ok {
		return &portico.Error{Class: portico.Permanent, Reason: "key changed while resolving", Err: ErrNotResolvable}
	}
	r.keep(ctx, key, next)
	return nil
}

// resolvable reports whether rec is Unknown, or Pending past its lease at now.
func resolvable(rec Record, now time.Time) bool {
	return rec.State == Unknown || rec.State == Pending && !now.Before(rec.Lease)
}

// record returns the record of o under a new owner, expiring at expires.
func (o Outcome) record(expires time.Time) Record {
	next := Record{State: Failed, Class: portico.Transient, Reason: "reconciled: not executed"}
	if o.Happened {
		next = Record{State: Completed, Result: bytes.Clone(o.Result)}
	}
	next.Owner = rand.Text()
	next.Expires = expires
	return next
}

// Once is [Runner.Do] for a typed result: fn's result is stored as JSON and
// decoded for every caller, so each gets its own copy. A result that does not
// encode leaves the key Unknown (the effect ran but its result is lost);
// one that does not decode into T gives a Permanent error; every other error
// is [Runner.Do]'s. Once panics if fn is nil.
func Once[T any](ctx context.Context, r *Runner, key Key, fn func(context.Context) (T, error)) (T, error) {
	return once(ctx, r, key, "", fn)
}

// OnceArgs is [Runner.DoArgs] for a typed result, as [Once] is for Do: a
// caller whose arguments differ from those of the step's completed run gets
// that run's result, decoded, with the error wrapping [ErrArgumentsDiffer].
func OnceArgs[T any](ctx context.Context, r *Runner, key Key, args json.RawMessage, fn func(context.Context) (T, error)) (T, error) {
	fp, err := Fingerprint(args)
	if err != nil {
		var zero T
		return zero, err
	}
	return once(ctx, r, key, fp, fn)
}

func once[T any](ctx context.Context, r *Runner, key Key, fp string, fn func(context.Context) (T, error)) (T, error) {
	if fn == nil {
		panic("effect: Once of a nil func")
	}
	var zero T
	res, err := r.do(ctx, key, fp, encoding(fn))
	if err != nil && res == nil {
		return zero, err
	}
	var out T
	if derr := json.Unmarshal(res, &out); derr != nil {
		return zero, &portico.Error{Class: portico.Permanent, Reason: "effect result does not decode", Err: derr}
	}
	return out, err
}

// encoding runs fn and returns its result as JSON: Ambiguous when it does
// not encode (the effect ran but its result is lost).
func encoding[T any](fn func(context.Context) (T, error)) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &portico.Error{Class: portico.Ambiguous, Reason: "effect result does not encode", Err: err}
		}
		return b, nil
	}
}

// storeFailed returns the error of a Do the store could not decide, which
// runs nothing (at most once admits no other choice: the store fails
// closed), and reports it as a [portico.EventSharedStore] and a warning.
func (r *Runner) storeFailed(ctx context.Context, err error) error {
	portico.Observe(ctx, portico.Event{Kind: portico.EventSharedStore, Class: portico.Transient, Reason: "effect:fail_closed"})
	r.log.LogAttrs(ctx, slog.LevelWarn, "effect: store failed, effect not run", slog.String("err", err.Error()))
	return storeError(err)
}

func storeError(err error) error {
	return &portico.Error{Class: portico.Transient, Reason: "effect store", Err: portico.Join(ErrStore, err)}
}

func unknownError(reason string, cause error) error {
	return &portico.Error{Class: portico.Ambiguous, Reason: cmp.Or(reason, "outcome unknown"), Err: portico.Join(ErrUnknown, cause)}
}

// reasonOf returns a content-free reason for err: the Reason of its
// *portico.Error, or its class's name.
func reasonOf(err error, class portico.Class) string {
	var e *portico.Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason
	}
	return class.String()
}
