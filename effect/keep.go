package effect

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// LossWatcher is a [Store] that can tell that it lost records (package
// redisstore's Effects does, by its store epoch). A [Runner] over one
// keeps its latest outcomes and writes them back when the count of losses
// changes (see Store loss in the package documentation).
type LossWatcher interface {
	Store
	// Losses asks the store whether it lost records and returns how many
	// losses this value has seen since it was made, or the store's error
	// when it cannot tell. A Runner calls it every Config.Poll while it
	// keeps outcomes, with w, which renews its membership: after a loss,
	// the store refuses claims of keys it holds no record of until every
	// member has written back or its Hold has run out; Hold zero: the
	// Runner leaves (it keeps nothing more).
	Losses(ctx context.Context, w Member) (uint64, error)
}

// Member is what a [Runner] tells a [LossWatcher] each time it asks.
type Member struct {
	// ID is the Runner's random id.
	ID string
	// Written is the count of losses (Losses' answer) after which the
	// Runner last wrote back every outcome it keeps.
	Written uint64
	// Hold is how long from this call the store waits for this Runner to
	// write back after a loss: [Config.Hold], zero to leave.
	Hold time.Duration
}

// Bounds of the outcomes a Runner keeps to write back after a loss.
const (
	// DefaultKeep is [Config.Keep]'s default.
	DefaultKeep = 1024
	// MaxKeptBytes bounds the bytes of the outcomes a Runner keeps (keys,
	// results, fingerprints, reasons and claim tokens), whatever
	// [Config.Keep]: 4 MiB.
	MaxKeptBytes = 4 << 20
	// keptOverhead is what one kept outcome costs besides its bytes: its
	// list element, map entry and Record.
	keptOverhead = 256
	// writers is how many outcomes a write-back after a loss writes at
	// once, so that 1,024 outcomes take 64 round trips, not 1,024.
	writers = 16
)

// kept is an outcome this Runner recorded that says the effect may have
// happened (Completed or Unknown), kept until it expires to write it back
// if the store loses it.
type kept struct {
	key  Key
	rec  Record
	size int
	obs  portico.Observer // of the run that recorded it, nil for none
}

// keptSet is a Runner's kept outcomes, oldest first; the Runner's mu
// guards it.
type keptSet struct {
	max   int
	bytes int
	order *list.List // of *kept, oldest first
	at    map[Key]*list.Element
}

// put keeps rec as key's outcome if it says the effect may have happened,
// else forgets key's; the oldest go beyond max outcomes or MaxKeptBytes.
func (s *keptSet) put(key Key, rec Record, obs portico.Observer) {
	s.drop(key)
	if rec.State != Completed && rec.State != Unknown {
		return
	}
	k := &kept{key: key, rec: rec, obs: obs, size: keptOverhead + len(key) + len(rec.Result) + len(rec.Args) + len(rec.Reason) + len(rec.Owner)}
	if s.max <= 0 || k.size > MaxKeptBytes {
		return
	}
	for s.order.Len() >= s.max || s.bytes+k.size > MaxKeptBytes {
		s.drop(s.order.Front().Value.(*kept).key)
	}
	s.at[key] = s.order.PushBack(k)
	s.bytes += k.size
}

// drop forgets key's outcome.
func (s *keptSet) drop(key Key) {
	if e, ok := s.at[key]; ok {
		s.bytes -= e.Value.(*kept).size
		s.order.Remove(e)
		delete(s.at, key)
	}
}

// get returns key's kept outcome, unexpired at now.
func (s *keptSet) get(key Key, now time.Time) (Record, bool) {
	e, ok := s.at[key]
	if !ok || !now.Before(e.Value.(*kept).rec.Expires) {
		return Record{}, false
	}
	return e.Value.(*kept).rec, true
}

// expire drops the outcomes expired at now (the oldest first: they all
// live a TTL).
func (s *keptSet) expire(now time.Time) {
	for e := s.order.Front(); e != nil && !now.Before(e.Value.(*kept).rec.Expires); e = s.order.Front() {
		s.drop(e.Value.(*kept).key)
	}
}

// live drops the outcomes expired at now and returns the others, newest
// first (the likeliest to be asked for again soon).
func (s *keptSet) live(now time.Time) []kept {
	s.expire(now)
	out := make([]kept, 0, s.order.Len())
	for e := s.order.Back(); e != nil; e = e.Prev() {
		out = append(out, *e.Value.(*kept))
	}
	return out
}

// keep keeps next, key's outcome recorded by this Runner (or forgets
// key's, for an outcome that says the effect did not happen), when the
// store can tell a loss, and starts the write-back loop.
func (r *Runner) keep(ctx context.Context, key Key, next Record) {
	if r.watch == nil {
		return
	}
	obs := portico.ObserverFromContext(ctx)
	r.mu.Lock()
	r.kept.put(key, next, obs)
	r.startWriting()
	r.mu.Unlock()
}

// lost notes that the store said it lost records (a claim refused in
// quarantine): the kept outcomes are written back at the next Poll.
func (r *Runner) lost() {
	r.mu.Lock()
	r.rewrite = true
	r.mu.Unlock()
}

// watchLosses asks the store for its count of losses and reports whether
// the kept outcomes are to be written back: the count changed since the
// last answer, none was seen yet (a loss may have come before it), or a
// refused claim told of a loss.
func (r *Runner) watchLosses() bool {
	r.mu.Lock()
	r.kept.expire(time.Now())
	idle := r.kept.order.Len() == 0
	r.mu.Unlock()
	if idle {
		return false
	}
	r.mu.Lock()
	m := Member{ID: r.id, Written: r.written, Hold: r.hold}
	r.member = true
	r.mu.Unlock()
	n, err := r.watch.Losses(r.ctx, m)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && (!r.counted || n != r.losses) {
		r.losses, r.counted, r.rewrite = n, true, true
	}
	return err == nil && r.rewrite
}

// writeKept writes every live kept outcome back over a key the store lost
// ([Runner.restore]), newest first, writers at a time; it stops at the
// first store error (the write-back is tried again at the next Poll). An
// outcome whose key another run holds now, or that someone resolved, is
// forgotten: it is not the key's any more (another run that took it is
// reported: a double run). Done, the Runner's next Member says so.
func (r *Runner) writeKept() {
	r.mu.Lock()
	todo := r.kept.live(time.Now())
	r.rewrite = false
	upto := r.losses
	r.mu.Unlock()
	var failed atomic.Bool
	var wg sync.WaitGroup
	sem := make(chan struct{}, writers)
	for _, k := range todo {
		sem <- struct{}{}
		if failed.Load() {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if !r.writeKeptOne(k) {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		r.lost()
		return
	}
	r.mu.Lock()
	r.written = max(r.written, upto)
	r.mu.Unlock()
}

// writeKeptOne writes k back ([Runner.restore]), reporting a double run
// when another run took its key and forgetting k when the key is not k's
// any more; false on a store error.
func (r *Runner) writeKeptOne(k kept) bool {
	ok, taken, err := r.restore(r.ctx, k.key, k.rec)
	if err != nil {
		return false
	}
	if taken {
		r.ranTwice(k)
	}
	if !ok {
		r.forget(k)
	}
	return true
}

// ranTwice reports that k's key, written back after a loss, was found run
// again by another run: a warning, and an [portico.EventSharedStore] of
// reason "effect:ran_twice" to the observer of the run that recorded k.
func (r *Runner) ranTwice(k kept) {
	r.log.Warn("effect: a kept outcome's key was run again after a store loss", "key", string(k.key), "state", k.rec.State.String())
	if k.obs != nil {
		k.obs.Observe(r.ctx, portico.Event{Kind: portico.EventSharedStore, Class: portico.Ambiguous, Reason: "effect:ran_twice"})
	}
}

// leave tells the store this Runner keeps no outcomes any more, so that
// after a loss no claim waits for its write-back.
func (r *Runner) leave() {
	r.mu.Lock()
	m := Member{ID: r.id, Written: r.written}
	r.mu.Unlock()
	_, _ = r.watch.Losses(context.WithoutCancel(r.ctx), m) // failed: its Hold runs out
}

// leaveIfMember makes the Runner leave the store's members if it joined.
func (r *Runner) leaveIfMember() {
	if r.watch == nil {
		return
	}
	r.mu.Lock()
	joined := r.member
	r.member = false
	r.mu.Unlock()
	if joined {
		r.leave()
	}
}

// forget drops k unless key's kept outcome changed since.
func (r *Runner) forget(k kept) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec, ok := r.kept.get(k.key, time.Now()); ok && rec.sameClaim(k.rec) {
		r.kept.drop(k.key)
	}
}

// fromKept answers a claim the store refused in quarantine from key's kept
// outcome, if this Runner holds one: the store lost the record, and the
// write-back is under way.
func (r *Runner) fromKept(key Key) (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kept.get(key, time.Now())
}
