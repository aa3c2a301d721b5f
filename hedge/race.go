package hedge

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/lazyctx"
	"github.com/portico-llm/portico/internal/mono"
)

// Attempt is one attempt of a race, as a [Plan] prepares it.
type Attempt struct {
	// Model answers the attempt; Request is what it is sent (its OnChunk,
	// when streaming, is wrapped by the race).
	Model   portico.Model
	Request *portico.Request
	// Context, when non-nil, is the context to call Model under, derived
	// from the race's (a share of a deadline, say); nil means the race's.
	// The race derives a cancelable context from it when a hedge may run
	// beside the attempt.
	Context context.Context
	// Cancel, when non-nil, ends Context, which the Plan made for this
	// attempt alone and ends anyway once it ended: the race then cancels the
	// attempt with it (when another attempt won) instead of deriving a
	// cancelable context, one allocation, of its own.
	Cancel interface{ Cancel() }
	// Destination names the attempt's destination in events.
	Destination string
	// Latency, when non-nil, is the destination's sketch: when the Hedger
	// waits a Config.Percentile, an attempt started first or after a failure
	// (not a hedge) adds its latency (time to the first chunk when
	// streaming) to it, and the delay before the hedge that follows it is
	// that percentile of it.
	Latency *Latency
}

// Result is how an attempt ended, as the race reports it to its [Plan].
type Result struct {
	// Response and Err are what the attempt's Model returned (a Response
	// without error becomes [portico.ErrNilResponse]'s failure).
	Response *portico.Response
	Err      error
	// Delivered: a chunk of the attempt reached the caller; CallerFailed:
	// the caller's OnChunk failed during it.
	Delivered, CallerFailed bool
	// Lost: the race canceled the attempt because another one won.
	// Unsent: it did so before the attempt's Model was called (another
	// answered, or its chunk reached the caller, while the Plan prepared
	// it); Err is then Canceled and NotSent.
	Lost, Unsent bool
	// Elapsed is the attempt's duration; TTFT the time to its first chunk
	// that reached the caller, 0 if none did.
	Elapsed, TTFT time.Duration
}

// Plan is what a race runs: the attempts it may start, and what their ends
// mean. [Hedger.Wrap] runs one over a single Model; package fallback runs
// one over its candidates. The race calls both methods one at a time, never
// concurrently: from the goroutine that called [Hedger.Run] until a hedge
// is due, then from the goroutine that runs the race from there on; ctx
// is the context the race was run under, and a the attempt as Next
// prepared it, so that a Plan need keep neither.
type Plan interface {
	// Next prepares attempt i (0 first) in *a, setting every field of it
	// (a may hold an earlier race's attempt). For a hedge, charge is
	// non-nil: Next must call it with the attempt's destination before
	// committing to the attempt and, when it reports false (the budget is
	// empty), return ok false having changed nothing. For the first attempt
	// and one that follows a failure, charge is nil. ok false also means no
	// attempt is left; a non-nil stop ends the race with that error.
	Next(ctx context.Context, i int, charge func(destination string) bool, a *Attempt) (ok bool, stop error)
	// Ended reports the end of attempt i, prepared in *a, as *res says
	// (both valid during the call only). A non-nil stop ends the race with that error, the other
	// attempts canceled; it is ignored for an attempt that Lost and for the
	// winner (Err nil, or Delivered).
	Ended(ctx context.Context, i int, a *Attempt, res *Result) (stop error)
}

// errLost is the cause with which the race cancels the attempts that lost,
// and the error its gate returns for a chunk of one.
var errLost = errors.New("hedge: another attempt won")

// race is one request's race. Until a hedge is due, its attempts run one
// at a time on the caller's goroutine (run, runInline); the scheduler (or
// the hedge's timer) then hands the race to a goroutine of its own
// (attempt.fire, coordinate),
// which starts the hedges on goroutines of theirs and receives every end,
// the caller's attempt's included, while the caller waits for the outcome.
type race struct {
	h    *Hedger
	ctx  context.Context
	req  *portico.Request
	plan Plan

	mu     sync.Mutex    // guards the fields down to won
	caller int           // 1 + the index of the caller's attempt whose hedge may take the race over; 0 none
	winner int           // the attempt whose chunk reached the caller first; -1 none yet, -2 none ever
	live   []*attempt    // attempts running
	won    chan struct{} // closed when a chunk reached the caller; nil unless raced and streaming

	// Set before the race is handed over: the ends of the attempts, and
	// the outcome, published when final closes.
	results chan *attempt
	final   chan struct{}
	resp    *portico.Response
	idx     int
	err     error

	// The race's goroutine's own (the caller's until the race is handed
	// over): the hedges' timer, the next attempt's index, the attempts
	// running, when the newest started, and a panic to raise again.
	timer         *time.Timer
	timerC        <-chan time.Time
	next, running int
	started       time.Duration // on the mono clock
	paniced       bool
	panicVal      any
	stale         bool // a hedge fired too late: its goroutine may still read the race
	// The error of the last attempt that failed, and of the last the race
	// canceled, after it may have been sent (see note).
	sent, lostSent error

	// A race held in a slot of the Hedger's scheduler: the slot, the mode
	// of its clock, the first attempt's start, and the due time it armed.
	sl     *slot
	mode   int32
	start0 time.Duration
	due    int64

	// In the race's one allocation, reused (racePool): the first attempt,
	// its timer's callback and, made outside any testing/synctest bubble,
	// its timer, room for the attempts running, and the Plan of a Wrap.
	first   attempt
	fire0   func()
	timer0  *time.Timer // stopped before it fired, or nil
	liveBuf [4]*attempt
	one     single
}

// racePool keeps the state of races that nothing can reach any more: a
// request that does not stream (a Model never sees the race's state) whose
// race was never handed over and whose hedge timer never fired. A pooled
// race keeps its first attempt's timer, stopped, when that timer was made
// outside any bubble: goroutines outside bubbles may then reuse it, and
// those in one never touch it (a timer belongs to the bubble it was made in,
// and one made outside does not follow a bubble's clock).
var racePool = sync.Pool{New: func() any {
	r := new(race)
	r.fire0 = r.first.fire
	return r
}}

// attempt is one running attempt and its result.
type attempt struct {
	portico.StreamWatch
	r       *race
	i       int
	a       Attempt
	hedge   bool
	start   time.Duration       // on the mono clock
	bubbled bool                // start was read in a testing/synctest bubble
	coarse  bool                // start is the scheduler's reading (see attempt.now)
	cancel  *lazyctx.Cancelable // nil for an attempt no hedge may run beside, or one the Plan ends
	ctx     context.Context     // a launched attempt's
	lost    bool                // stopped because another won; guarded by r.mu
	timer   *time.Timer         // an inline attempt's hedge timer, or nil
	res     Result
	panic   any // what Model.Generate panicked with
	paniced bool
}

// Run races plan's attempts for req: attempt 0 at once, then, while fewer
// than Config.MaxAttempts run and none answered, a hedge after each delay;
// an attempt that fails while none other runs is followed at once by the
// plan's next. The first answer wins (for a stream, the first attempt whose
// chunk reaches the caller: only its chunks reach req.OnChunk); the others
// are canceled and waited for, so nothing runs after Run returns.
//
// It returns the winning answer and its index, or the error a Plan stopped
// the race with, or else the last attempt's error, NotSent only when no
// attempt may have been sent ([portico.AfterSent] otherwise). A panic of an
// attempt is raised again on the caller's goroutine once the others ended.
// It returns (nil, -1, nil) when the plan had no attempt 0, and (nil, -1,
// [portico.Gone]'s error) for a context done already.
func (h *Hedger) Run(ctx context.Context, req *portico.Request, plan Plan) (*portico.Response, int, error) {
	if err := portico.Gone(ctx); err != nil {
		return nil, -1, err // the caller has gone: no attempt, no hedge
	}
	r := h.newRace(ctx, req)
	if !samePlan(r.plan, plan) { // a race in a slot keeps its last plan
		r.plan = plan
	}
	return r.result()
}

// samePlan reports whether a and b are one interface value, word for
// word: == may panic (a Plan of a type == cannot compare).
func samePlan(a, b Plan) bool {
	x, y := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return x[0] == y[0] && x[1] == y[1] // not x == y: a call of memequal
}

// newRace returns the state of a race: that of a slot of the Hedger's
// scheduler, or when none is free (or the scheduler is another world's),
// one from the pool, whose first attempt takes a timer.
func (h *Hedger) newRace(ctx context.Context, req *portico.Request) *race {
	start, mode := h.sched.reading()
	var sl *slot
	if mode != stopped {
		if sl = h.sched.slots.Claim(); sl != nil {
			sl.Holders++ // tells this race's arming from the slot's next (see scheduler.due)
		}
	}
	if sl == nil {
		r := racePool.Get().(*race)
		r.h, r.ctx, r.req, r.winner = h, ctx, req, -1
		r.sent, r.lostSent = nil, nil
		r.live = r.liveBuf[:0]
		return r
	}
	r := sl.V.Load()
	if r == nil {
		r = &race{h: h, sl: sl}
		r.first.r = r
		r.live = r.liveBuf[:0]
		sl.V.Store(r)
	}
	r.ctx, r.req, r.winner, r.mode, r.start0 = ctx, req, -1, mode, start
	r.sent, r.lostSent = nil, nil
	return r
}

// result runs the race, raises again a panic of an attempt, and puts the
// race's state back in its slot or the pool when nothing can reach it.
func (r *race) result() (*portico.Response, int, error) {
	if sl := r.sl; sl != nil {
		ok := false
		defer func() { r.release(ok) }()
		resp, i, err := r.run()
		if r.paniced {
			panic(r.panicVal)
		}
		ok = true
		return resp, i, r.afterSent(resp, err)
	}
	resp, i, err := r.run()
	if r.paniced {
		panic(r.panicVal)
	}
	err = r.afterSent(resp, err)
	if r.reusable() {
		fire0, timer0 := r.fire0, r.timer0
		*r = race{fire0: fire0, timer0: timer0}
		racePool.Put(r)
	}
	return resp, i, err
}

// reusable reports whether nothing can reach the race's state any more: a
// request that does not stream (a Model never sees the race's state) whose
// race was never handed over and whose hedge was never fired.
func (r *race) reusable() bool { return r.req.OnChunk == nil && r.final == nil && !r.stale }

// clear readies a reusable race for its next request in its slot, and
// lets go of what its last request referenced. It writes only the fields
// a race that was never handed over and did not stream sets, and of
// those only the pointers that are not nil, and keeps those that stay the
// same (its Hedger, its slot, its plan): a whole new race is hundreds of
// bytes of pointers, each a write barrier while the garbage collector
// marks.
func (r *race) clear() {
	r.ctx, r.req = nil, nil
	if r.one.req != nil {
		r.one.req = nil
	}
	r.next, r.running, r.started, r.stale, r.due = 0, 0, 0, false, 0
	at := &r.first
	at.a.Request = nil
	if at.a.Context != nil {
		at.a.Context = nil
	}
	if at.a.Cancel != nil {
		at.a.Cancel = nil
	}
	if at.res.Response != nil {
		at.res.Response = nil
	}
	if at.res.Err != nil {
		at.res.Err = nil
	}
	if at.cancel != nil {
		at.cancel = nil
	}
	at.res.Delivered, at.res.CallerFailed, at.lost = false, false, false
}

// release frees r's slot after r ended (normally: ok), leaving r there
// for the next race when it is reusable, else a new state.
func (r *race) release(ok bool) {
	s, mode, sl := &r.h.sched, r.mode, r.sl
	if ok && r.reusable() {
		r.clear()
	} else {
		sl.V.Store(nil)
	}
	sl.Release()
	s.poke(mode)
}

// run runs the attempts one after the other on the caller's goroutine until
// one answers or the plan stops, or until a hedge hands the race over
// (runInline): it then waits for the outcome.
func (r *race) run() (*portico.Response, int, error) {
	var last error
	for {
		at, ok, stop := r.prepare(nil)
		if stop != nil || !ok {
			if stop == nil {
				stop = last
			}
			return nil, -1, stop
		}
		r.inlineAttempt(at)
		if r.runInline(at) {
			<-r.final
			return r.resp, r.idx, r.err
		}
		res := &at.res
		if res.Err == nil || res.Delivered {
			r.plan.Ended(r.ctx, at.i, &at.a, res)
			return res.Response, at.i, res.Err
		}
		last = res.Err
		r.note(res)
		if stop := r.plan.Ended(r.ctx, at.i, &at.a, res); stop != nil {
			return nil, -1, stop
		}
	}
}

// note records res's error when its attempt failed (or was canceled, Lost)
// after it may have been sent ([portico.NothingSent]).
func (r *race) note(res *Result) {
	switch {
	case res.Err == nil || portico.NothingSent(res.Err):
	case res.Lost:
		r.lostSent = res.Err
	default:
		r.sent = res.Err
	}
}

// afterSent returns err, the race's error (resp nil), as a layer wrapping
// several calls must (see [portico.Error.NotSent]): when err says nothing
// was sent but an attempt that failed may have been, the error of
// [portico.AfterSent], of that attempt's class; when only an attempt the
// race canceled may have been sent, err's class and fields, not NotSent,
// with that attempt's error in its tree.
func (r *race) afterSent(resp *portico.Response, err error) error {
	if resp != nil || err == nil || !portico.NothingSent(err) {
		return err
	}
	if r.sent != nil {
		return portico.AfterSent(err, r.sent)
	}
	if r.lostSent == nil {
		return err
	}
	w := &portico.Error{Class: portico.ClassOf(err)}
	var pe *portico.Error
	if errors.As(err, &pe) {
		*w = *pe
	}
	w.NotSent, w.Err = false, portico.Join(err, r.lostSent)
	w.Reason = ""
	return w
}

// prepare asks the plan for attempt r.next (charged, when charge is
// non-nil), in the race's first attempt for attempt 0, else in a new one.
func (r *race) prepare(charge func(string) bool) (*attempt, bool, error) {
	at := &r.first
	if r.next > 0 {
		at = new(attempt)
	}
	ok, stop := r.plan.Next(r.ctx, r.next, charge, &at.a)
	return at, ok, stop
}

// begin starts at, which prepare made, as attempt r.next (a hedge or not)
// at a reading of the clock.
func (r *race) begin(at *attempt, hedge bool) {
	now := time.Now()
	*at = attempt{r: r, i: r.next, a: at.a, hedge: hedge, start: mono.Of(now), bubbled: inBubble(now)}
	r.next++
}

// inlineAttempt is begin for an attempt on the caller's goroutine: in a
// slot, it starts at the race's reading of the clock (the first) or the
// scheduler's (see scheduler.clock).
func (r *race) inlineAttempt(at *attempt) {
	if r.sl == nil {
		r.begin(at, false)
		return
	}
	if at == &r.first { // clear, or new (see race.clear)
		at.i, at.start, at.coarse = 0, r.start0, r.mode == coarse
	} else {
		*at = attempt{r: r, i: r.next, a: at.a, start: r.h.sched.clock(r.mode), coarse: r.mode == coarse}
	}
	r.next++
}

// now reads the clock for at: the scheduler's, when at started from it.
func (at *attempt) now() time.Duration {
	if at.coarse {
		return time.Duration(at.r.h.sched.now.Load())
	}
	return mono.Now()
}

// runInline runs at on the caller's goroutine. When a hedge may run beside it
// (a delay is known and ends before the race's deadline), at runs under a
// cancelable context with its hedge armed (in the race's slot, or on a
// timer), and runInline reports whether the hedge took the race over (see
// attempt.fire), at's end then passed on to the race's goroutine.
func (r *race) runInline(at *attempt) (handed bool) {
	ctx := at.a.Context
	if ctx == nil {
		ctx = r.ctx
	}
	r.started = at.start
	d, ok := r.h.delay(at.a.Latency)
	if ok && r.h.maxAttempts > 1 {
		if dl, has := lazyctx.At(r.ctx); has && mono.Add(at.start, d) >= dl {
			ok = false // the hedge would be due after the deadline
		}
	} else {
		ok = false
	}
	if !ok {
		at.call(ctx)
		return false
	}
	ctx = at.cancelable(ctx)
	r.setCaller(at.i + 1)
	if at == &r.first && r.sl != nil {
		// Armed once, for the first attempt, whose address the scheduler's
		// fire finds (see attempt.fire); later ones take a timer.
		s := &r.h.sched
		r.due = s.due(r.mode, at.start, d, r.sl.Holders)
		r.sl.Word.Store(r.due)
		s.start(r.mode, at.start, d)
	} else {
		r.arm(at, d)
	}
	normal := false
	defer func() {
		if !normal { // Model.Generate panicked: the panic goes on once the race ended
			r.ended(at, true)
		}
	}()
	at.call(ctx)
	normal = true
	return r.ended(at, false)
}

// arm arms the hedge timer of the inline attempt at, due after d: the
// pooled race's own timer for its first attempt outside a bubble, else a
// new one.
func (r *race) arm(at *attempt, d time.Duration) {
	switch {
	case at != &r.first:
		at.timer = time.AfterFunc(d, at.fire)
	case at.bubbled:
		at.timer = time.AfterFunc(d, r.fire0)
	case r.timer0 == nil:
		r.timer0 = time.AfterFunc(d, r.fire0)
		at.timer = r.timer0
	default:
		r.timer0.Reset(d)
		at.timer = r.timer0
	}
}

// ended settles the end of the inline attempt at: it disarms at's hedge
// and reports whether its hedge had taken the race over, in which case at
// (paniced, if it did) goes to the race's goroutine; after a panic, ended
// then waits for the race to end.
func (r *race) ended(at *attempt, paniced bool) bool {
	at.stop(nil)
	if r.disarm(at) {
		r.setCaller(0)
		return false
	}
	r.mu.Lock()
	handed := r.caller != at.i+1
	r.caller = 0
	r.drop(at)
	if handed && !paniced {
		r.answered(at)
	}
	r.mu.Unlock()
	if !handed { // the callback saw at ended, or a chunk of at delivered
		r.stale = true
		return false
	}
	at.paniced = paniced
	r.results <- at
	if paniced {
		<-r.final
	}
	return true
}

// disarm stops the hedge of the inline attempt at, and reports whether it
// did before the hedge fired: its slot's word taken back from the due time
// it armed, or its timer stopped.
func (r *race) disarm(at *attempt) bool {
	if at.timer == nil {
		ok := r.sl.Word.CompareAndSwap(r.due, slotHeld)
		r.h.sched.poke(r.mode)
		return ok
	}
	return at.timer.Stop()
}

// setCaller makes attempt i-1 (0: none) the attempt on the caller's
// goroutine, the only one running. The lock is needed only when a late
// callback may read the field: before the race's first timer is armed,
// arming it orders the write before its callback. An index, not a
// pointer: no write barrier.
func (r *race) setCaller(i int) {
	if r.stale {
		r.setCallerLocked(i)
		return
	}
	r.caller = i // the attempts running are that one alone: fire lists it in live
}

// setCallerLocked is setCaller under r.mu, out of line so that setCaller
// is inlined.
func (r *race) setCallerLocked(i int) {
	r.mu.Lock()
	r.caller = i
	r.mu.Unlock()
}

// fire is an inline attempt's hedge falling due (its timer's callback, or
// a goroutine of the scheduler's): unless the attempt ended or a chunk of
// it reached the caller, that goroutine takes the race over, sends the
// hedge and runs the race to its end (coordinate), while the attempt goes
// on on the caller's goroutine.
func (at *attempt) fire() {
	r := at.r
	r.mu.Lock()
	if r.caller != at.i+1 || r.winner != -1 {
		r.mu.Unlock()
		return
	}
	r.caller = 0
	r.live = append(r.liveBuf[:0], at)
	r.results = make(chan *attempt, r.h.maxAttempts)
	r.final = make(chan struct{})
	if r.req.OnChunk != nil {
		r.won = make(chan struct{})
	}
	r.mu.Unlock()
	r.running = 1
	r.resp, r.idx, r.err = r.coordinate()
	close(r.final)
}

// coordinate runs a race handed over by the caller's goroutine, whose
// attempt runs: it sends the hedge that was due, then hedges and follows
// failures as [Hedger.Run] says, until an answer or a stop.
func (r *race) coordinate() (*portico.Response, int, error) {
	defer func() {
		if r.timer != nil {
			r.timer.Stop()
		}
	}()
	if _, stop := r.start(true); stop != nil {
		return r.finish(nil, -1, stop)
	}
	won := r.won
	var last error
	for {
		select {
		case <-won:
			won, r.timerC = nil, nil // a chunk reached the caller: no more hedges
		case <-r.timerC:
			r.timerC = nil
			if r.running < r.h.maxAttempts && r.winnerIs() == -1 {
				if _, stop := r.start(true); stop != nil {
					return r.finish(nil, -1, stop)
				}
			}
		case at := <-r.results:
			r.running--
			res := &at.res
			if at.paniced {
				r.paniced, r.panicVal = true, at.panic
				return r.finish(nil, -1, nil)
			}
			if w := r.winnerIs(); w >= 0 && w != at.i {
				res.Lost = true
				r.plan.Ended(r.ctx, at.i, &at.a, res)
				continue // the winner is still running
			}
			if res.Err == nil || res.Delivered {
				r.plan.Ended(r.ctx, at.i, &at.a, res)
				return r.finish(res.Response, at.i, res.Err)
			}
			last = res.Err
			r.note(res)
			if stop := r.plan.Ended(r.ctx, at.i, &at.a, res); stop != nil {
				return r.finish(nil, -1, stop)
			}
			if r.running == 0 {
				if ok, stop := r.start(false); !ok {
					if stop != nil {
						return nil, -1, stop
					}
					return nil, -1, last
				}
			}
		}
	}
}

// start prepares and starts the next attempt of a handed-over race, a
// hedge or not, on a goroutine of its own, and arms the timer for the
// hedge that may follow it.
func (r *race) start(hedge bool) (bool, error) {
	var charge func(string) bool
	if hedge {
		charge = r.charge
	}
	at, ok, stop := r.prepare(charge)
	if stop != nil || !ok {
		return false, stop
	}
	r.launch(at, hedge)
	if d, ok := r.h.delay(at.a.Latency); ok {
		if r.timer == nil {
			r.timer = time.NewTimer(d)
		} else {
			r.timer.Reset(d)
		}
		r.timerC = r.timer.C
	}
	return true, nil
}

// finish cancels the attempts still running, waits for them (reporting each
// to the plan as lost), and returns its arguments.
func (r *race) finish(resp *portico.Response, i int, err error) (*portico.Response, int, error) {
	r.mu.Lock()
	if r.winner == -1 {
		r.winner = i
		if i < 0 {
			r.winner = -2 // ended without a winner: refuse every chunk
		}
	}
	for _, at := range r.live {
		if at.i != i {
			at.stop(errLost)
		}
	}
	r.mu.Unlock()
	// The attempts canceled together end in any order: the plan hears of
	// them in the order they started, so that what it records of them (a
	// group's hops) does not change from run to run.
	var buf [4]*attempt
	lost := buf[:0]
	for ; r.running > 0; r.running-- {
		lost = append(lost, <-r.results)
	}
	slices.SortFunc(lost, func(a, b *attempt) int { return a.i - b.i })
	for _, at := range lost {
		at.res.Lost = true
		r.note(&at.res)
		r.plan.Ended(r.ctx, at.i, &at.a, &at.res)
		if at.paniced && !r.paniced {
			r.paniced, r.panicVal = true, at.panic
		}
	}
	return resp, i, err
}

func (r *race) winnerIs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.winner
}

// answered makes at, which ended on the race's goroutine or was handed
// to it, the winner when it answered first: a hedge the Plan prepares
// meanwhile is then not sent (see launch), as after a winning chunk. r.mu
// is held.
func (r *race) answered(at *attempt) {
	if at.res.Err == nil && r.winner == -1 {
		r.winner = at.i
	}
}

// drop removes at from the attempts running; r.mu is held.
func (r *race) drop(at *attempt) {
	for k, x := range r.live {
		if x == at {
			r.live = append(r.live[:k], r.live[k+1:]...)
			return
		}
	}
}

// charge is the charge function a Plan gets for a hedge: it takes the
// hedge's token from the Hedger's budget, or reports an empty budget.
func (r *race) charge(dest string) bool {
	b := r.h.budget
	if b == nil || b.Take(dest, r.req.Identity.ClientKey) {
		return true
	}
	portico.Observe(r.ctx, portico.Event{Kind: portico.EventHedge, Route: dest, Reason: "budget"})
	return false
}

// refund gives a hedge's token back to the Hedger's budget when err says
// nothing was sent (NotSent, or Rejected: shed by a limiter, refused by a
// breaker) and the budget is a [Refunder].
func (r *race) refund(dest string, err error) {
	rf, ok := r.h.budget.(Refunder)
	if !ok {
		return
	}
	var pe *portico.Error
	if errors.As(err, &pe) && (pe.NotSent || pe.Class == portico.Rejected) {
		rf.Refund(dest, r.req.Identity.ClientKey)
	}
}

// launch starts at, which prepare made, as attempt r.next on a goroutine
// of its own.
func (r *race) launch(at *attempt, hedge bool) {
	parent := at.a.Context
	if parent == nil {
		parent = r.ctx
	}
	r.begin(at, hedge)
	a := &at.a
	at.ctx = at.cancelable(parent)
	r.running++
	r.mu.Lock()
	late := r.winner != -1 // another won (an answer, a chunk) while the Plan prepared at
	if late {
		at.lost = true
	} else {
		r.live = append(r.live, at)
	}
	r.mu.Unlock()
	if late {
		// Not sent: at ends at once, lost, and its budget token goes back.
		at.stop(nil)
		at.res.Err = &portico.Error{Class: portico.Canceled, NotSent: true, Reason: "not sent", Err: errLost}
		at.res.Unsent = true
		if hedge {
			r.refund(a.Destination, at.res.Err)
		}
		r.results <- at
		return
	}
	if hedge {
		portico.Observe(r.ctx, portico.Event{Kind: portico.EventHedge, Route: a.Destination, Attempt: at.i,
			Delay: at.start - r.started, Reason: "sent"})
	}
	r.started = at.start
	go at.run()
}

func (at *attempt) run() {
	r := at.r
	defer func() {
		at.stop(nil)
		r.mu.Lock()
		r.drop(at)
		if !at.paniced {
			r.answered(at)
		}
		r.mu.Unlock()
		r.results <- at
	}()
	defer func() {
		if p := recover(); p != nil {
			at.panic, at.paniced = p, true
		}
	}()
	at.call(at.ctx)
}

// cancelable returns the context to call at under, which the race can
// cancel (see attempt.stop): the Plan's, when it ends it (Attempt.Cancel),
// else one derived from parent.
func (at *attempt) cancelable(parent context.Context) context.Context {
	if at.a.Cancel != nil && at.a.Context != nil {
		return at.a.Context
	}
	at.cancel = lazyctx.WithCancel(parent)
	return at.cancel
}

// stop cancels at's context: with cause errLost when another attempt won.
// The race holds r.mu, or at has ended (cause nil).
func (at *attempt) stop(cause error) {
	if cause != nil {
		at.lost = true
	}
	if c := at.a.Cancel; c != nil && at.cancel == nil {
		c.Cancel()
		return
	}
	at.cancel.Cancel(cause)
}

// wasLost reports whether at, which failed under ctx, was canceled because
// another attempt won, of its race or of one around it.
func (at *attempt) wasLost(ctx context.Context) bool {
	r := at.r
	r.mu.Lock()
	lost := at.lost
	r.mu.Unlock()
	return lost || errors.Is(context.Cause(ctx), errLost)
}

// call calls the attempt's Model and records how it ended.
func (at *attempt) call(ctx context.Context) {
	req := at.a.Request
	if req.OnChunk != nil {
		req = at.Watch(req, at)
	}
	resp, err := at.a.Model.Generate(ctx, req)
	if err == nil && resp == nil {
		err = portico.ErrNilResponse
	}
	if resp != nil { // res is zero until then (begin, race.clear)
		at.res.Response = resp
	}
	if err != nil {
		at.res.Err = err
	}
	if at.hedge && err != nil {
		at.r.refund(at.a.Destination, err)
	}
	at.res.Elapsed = at.now() - at.start
	at.res.Delivered, at.res.CallerFailed = at.Delivered(), at.CallerFailed()
	lost := err != nil && at.wasLost(ctx)
	// The sketch learns from the attempts that did not start as hedges: the
	// time to an answer (to the first chunk when streaming, see GateChunk),
	// or for one canceled because another won, the time until then, a lower
	// bound that keeps the share of slow calls right.
	if at.learns() && (lost && at.res.TTFT == 0 || err == nil && req.OnChunk == nil) {
		at.a.Latency.Add(at.res.Elapsed)
	}
}

// learns reports whether at's latency goes to its destination's sketch:
// at is not a hedge, and the Hedger waits a percentile of it.
func (at *attempt) learns() bool {
	return !at.hedge && at.a.Latency != nil && at.r.h.percentile > 0
}

// GateChunk lets a chunk of at through to the caller only when at is, or
// becomes with this first chunk, the race's winner; the others are then
// canceled at once.
func (at *attempt) GateChunk(_ portico.Chunk, delivered bool) (bool, error) {
	if delivered {
		return true, nil
	}
	r := at.r
	r.mu.Lock()
	if r.winner == -1 {
		r.winner = at.i
		for _, x := range r.live {
			if x != at {
				x.stop(errLost)
			}
		}
		if r.won != nil {
			close(r.won)
		}
	}
	won := r.winner == at.i
	r.mu.Unlock()
	if !won {
		return false, errLost
	}
	at.res.TTFT = at.now() - at.start
	if at.learns() {
		at.a.Latency.Add(at.res.TTFT)
	}
	return true, nil
}

// inBubble reports whether now, read with time.Now, was read inside a
// testing/synctest bubble: the runtime gives a reading there no monotonic
// clock reading (the bubble's clock is not the process's).
func inBubble(now time.Time) bool { return now == now.Round(0) }
