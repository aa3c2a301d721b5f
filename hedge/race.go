package hedge

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/portico-llm/portico"
)

// Attempt is one attempt of a race, as a [Plan] prepares it.
type Attempt struct {
	// Model answers the attempt; Request is what it is sent (its OnChunk,
	// when streaming, is wrapped by the race).
	Model   portico.Model
	Request *portico.Request
	// Context, when non-nil, is the context to call Model under, derived
	// from the race's (a share of a deadline, say); nil means the race's.
	// The race calls Model under a cancelable context derived from it.
	Context context.Context
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
// one over its candidates. The race calls both methods on the goroutine
// that called [Hedger.Run], one at a time; ctx is the context the race
// was run under, and a the attempt as Next prepared it, so that a Plan
// need keep neither.
type Plan interface {
	// Next prepares attempt i (0 first) in *a, which is zero. For a hedge,
	// charge is non-nil: Next must call it with the attempt's destination
	// before committing to the attempt and, when it reports false (the
	// budget is empty), return ok false having changed nothing. For the
	// first attempt and one that follows a failure, charge is nil. ok false
	// also means no attempt is left; a non-nil stop ends the race with that
	// error.
	Next(ctx context.Context, i int, charge func(destination string) bool, a *Attempt) (ok bool, stop error)
	// Ended reports the end of attempt i, prepared in *a, as *res says
	// (both valid during the call only). A non-nil stop ends the race with
	// that error, the other attempts canceled; it is ignored for an attempt
	// that Lost and for the winner (Err nil, or Delivered).
	Ended(ctx context.Context, i int, a *Attempt, res *Result) (stop error)
}

// errLost is the cause with which the race cancels the attempts that lost,
// and the error its gate returns for a chunk of one.
var errLost = errors.New("hedge: another attempt won")

// race is one request's race. Run's goroutine starts every attempt on a
// goroutine of its own and receives their ends, with one timer for the
// hedge due next; the attempts' goroutines touch only the fields r.mu
// guards.
type race struct {
	h    *Hedger
	ctx  context.Context
	req  *portico.Request
	plan Plan

	results        chan *attempt // the ends of the attempts
	timer          *time.Timer   // the next hedge's; nil until one is armed
	due            <-chan time.Time
	next, running  int       // the next attempt's index; the attempts not yet received
	started        time.Time // when the newest attempt started
	last           error     // the last attempt's error
	sent, lostSent error     // see note
	panicked       bool
	panicVal       any

	mu     sync.Mutex    // guards winner, live and the attempts' lost
	winner int           // the attempt that won; -1 none yet, -2 none ever
	live   []*attempt    // attempts running
	won    chan struct{} // closed when a chunk reached the caller; nil unless streaming
}

// attempt is one running attempt and its result.
type attempt struct {
	portico.StreamWatch
	r        *race
	i        int
	a        Attempt
	hedge    bool
	start    time.Time
	ctx      context.Context
	cancel   context.CancelCauseFunc
	lost     bool // stopped because another won; guarded by r.mu
	res      Result
	panicked bool
	panicVal any // what Model.Generate panicked with
}

// Run races plan's attempts for req: attempt 0 at once, then, while fewer
// than Config.MaxInFlight run and none answered, a hedge after each delay;
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
	r := &race{h: h, ctx: ctx, req: req, plan: plan, winner: -1, results: make(chan *attempt, h.maxInFlight)}
	if req.OnChunk != nil {
		r.won = make(chan struct{})
	}
	var resp *portico.Response
	i, err := -1, error(nil)
	if ok, stop := r.start(false); ok {
		resp, i, err = r.loop()
	} else {
		err = stop
	}
	if r.panicked {
		panic(r.panicVal)
	}
	return resp, i, r.afterSent(resp, err)
}

// loop receives the attempts' ends and sends the hedges due until an
// answer or a stop.
func (r *race) loop() (*portico.Response, int, error) {
	defer func() {
		if r.timer != nil {
			r.timer.Stop()
		}
	}()
	won := r.won
	for {
		select {
		case <-won:
			won, r.due = nil, nil // a chunk reached the caller: no more hedges
		case <-r.due:
			r.due = nil
			if r.running < r.h.maxInFlight && r.winnerIs() == -1 {
				if _, stop := r.start(true); stop != nil {
					return r.finish(nil, -1, stop)
				}
			}
		case at := <-r.results:
			if resp, i, err, done := r.ended(at); done {
				return resp, i, err
			}
		}
	}
}

// ended settles the end of at, and reports whether the race is over.
func (r *race) ended(at *attempt) (*portico.Response, int, error, bool) {
	r.running--
	res := &at.res
	if at.panicked {
		r.panicked, r.panicVal = true, at.panicVal
		resp, i, err := r.finish(nil, -1, nil)
		return resp, i, err, true
	}
	if w := r.winnerIs(); w >= 0 && w != at.i {
		res.Lost = true
		r.plan.Ended(r.ctx, at.i, &at.a, res)
		return nil, -1, nil, false // the winner is still running
	}
	if res.Err == nil || res.Delivered {
		r.plan.Ended(r.ctx, at.i, &at.a, res)
		resp, i, err := r.finish(res.Response, at.i, res.Err)
		return resp, i, err, true
	}
	r.last = res.Err
	r.note(res)
	if stop := r.plan.Ended(r.ctx, at.i, &at.a, res); stop != nil {
		resp, i, err := r.finish(nil, -1, stop)
		return resp, i, err, true
	}
	if r.running > 0 {
		return nil, -1, nil, false
	}
	if ok, stop := r.start(false); !ok {
		if stop == nil {
			stop = r.last
		}
		return nil, -1, stop, true
	}
	return nil, -1, nil, false
}

// start prepares the next attempt, a hedge or not, starts it on a
// goroutine of its own, and arms the timer for the hedge that may follow
// it. It reports false when the plan had no attempt, and the error it
// stopped the race with.
func (r *race) start(hedge bool) (bool, error) {
	var charge func(string) bool
	if hedge {
		charge = r.charge
	}
	at := &attempt{r: r, i: r.next, hedge: hedge}
	if ok, stop := r.plan.Next(r.ctx, r.next, charge, &at.a); stop != nil || !ok {
		return false, stop
	}
	r.next++
	r.launch(at)
	r.arm(at)
	return true, nil
}

// launch starts at under a cancelable context, unless another attempt won
// (an answer, a chunk) while the Plan prepared it: then at ends at once,
// lost and not sent, and its hedge's token goes back.
func (r *race) launch(at *attempt) {
	parent := at.a.Context
	if parent == nil {
		parent = r.ctx
	}
	at.ctx, at.cancel = context.WithCancelCause(parent)
	at.start = time.Now()
	r.running++
	r.mu.Lock()
	late := r.winner != -1
	if late {
		at.lost = true
	} else {
		r.live = append(r.live, at)
	}
	r.mu.Unlock()
	if late {
		at.cancel(errLost)
		at.res.Err = &portico.Error{Class: portico.Canceled, NotSent: true, Reason: "not sent", Err: errLost}
		at.res.Unsent = true
		if at.hedge {
			r.refund(at.a.Destination, at.res.Err)
		}
		r.results <- at // room for every attempt in flight
		return
	}
	if at.hedge {
		portico.Observe(r.ctx, portico.Event{Kind: portico.EventHedge, Route: at.a.Destination, Attempt: at.i,
			Delay: at.start.Sub(r.started), Reason: "sent"})
	}
	r.started = at.start
	go at.run()
}

// arm arms the timer of the hedge after at, unless no hedge may follow it:
// the delay is not known, or ends after the race's deadline.
func (r *race) arm(at *attempt) {
	d, ok := r.h.delay(at.a.Latency)
	if !ok || !dueBefore(r.ctx, at.start, d) {
		return
	}
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	r.due = r.timer.C
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
			at.stop()
		}
	}
	r.mu.Unlock()
	// The attempts canceled together end in any order: the plan hears of
	// them in the order they started, so that what it records of them (a
	// group's hops) does not change from run to run.
	lost := make([]*attempt, 0, r.running)
	for ; r.running > 0; r.running-- {
		lost = append(lost, <-r.results)
	}
	slices.SortFunc(lost, func(a, b *attempt) int { return a.i - b.i })
	for _, at := range lost {
		at.res.Lost = true
		r.note(&at.res)
		r.plan.Ended(r.ctx, at.i, &at.a, &at.res)
		if at.panicked && !r.panicked {
			r.panicked, r.panicVal = true, at.panicVal
		}
	}
	return resp, i, err
}

func (r *race) winnerIs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.winner
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

// run calls at's Model on at's goroutine and hands its end to the race:
// at then wins if it answered first (a hedge the Plan prepares meanwhile
// is not sent, see launch).
func (at *attempt) run() {
	r := at.r
	defer func() {
		if p := recover(); p != nil {
			at.panicked, at.panicVal = true, p
		}
		at.cancel(nil)
		r.mu.Lock()
		r.live = slices.DeleteFunc(r.live, func(x *attempt) bool { return x == at })
		if !at.panicked && at.res.Err == nil && r.winner == -1 {
			r.winner = at.i
		}
		r.mu.Unlock()
		r.results <- at
	}()
	at.call()
}

// stop cancels at because another attempt won; r.mu is held.
func (at *attempt) stop() {
	at.lost = true
	at.cancel(errLost)
}

// wasLost reports whether at, which failed, was canceled because another
// attempt won, of its race or of one around it.
func (at *attempt) wasLost() bool {
	r := at.r
	r.mu.Lock()
	lost := at.lost
	r.mu.Unlock()
	return lost || errors.Is(context.Cause(at.ctx), errLost)
}

// call calls the attempt's Model and records how it ended.
func (at *attempt) call() {
	req := at.a.Request
	if req.OnChunk != nil {
		req = at.Watch(req, at)
	}
	resp, err := at.a.Model.Generate(at.ctx, req)
	if err == nil && resp == nil {
		err = portico.ErrNilResponse
	}
	at.res.Response, at.res.Err = resp, err
	if at.hedge && err != nil {
		at.r.refund(at.a.Destination, err)
	}
	at.res.Elapsed = time.Since(at.start)
	at.res.Delivered, at.res.CallerFailed = at.Delivered(), at.CallerFailed()
	// The sketch learns from the attempts that did not start as hedges: the
	// time to an answer (to the first chunk when streaming, see GateChunk),
	// or for one canceled because another won, the time until then, a lower
	// bound that keeps the share of slow calls right.
	if err == nil && req.OnChunk == nil || err != nil && at.res.TTFT == 0 && at.wasLost() {
		at.learn(at.res.Elapsed)
	}
}

// learn adds d to at's destination's sketch when at is not a hedge and the
// Hedger waits a percentile of it.
func (at *attempt) learn(d time.Duration) {
	if !at.hedge && at.a.Latency != nil && at.r.h.percentile > 0 {
		at.a.Latency.Add(d)
	}
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
				x.stop()
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
	at.res.TTFT = time.Since(at.start)
	at.learn(at.res.TTFT)
	return true, nil
}
