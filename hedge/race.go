package hedge

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// errLost is the cause with which the race cancels the attempts that lost,
// and the error its gate returns for a chunk of one.
var errLost = errors.New("hedge: another attempt won")

// race is one request's race: each attempt on a goroutine of its own,
// whose ends the caller's goroutine receives, with a timer for the hedge
// due next. The attempts' goroutines touch only the fields r.mu guards.
type race struct {
	h    *Hedger
	ctx  context.Context
	req  *portico.Request
	plan Plan

	results        chan *attempt    // the ends of the attempts
	due            <-chan time.Time // when the next hedge is due; nil none
	next, running  int              // the next attempt's index; the attempts not yet settled
	started        time.Time        // when the newest attempt started
	last           error            // the last attempt's error
	sent, lostSent error            // see note
	panicked       any              // what an attempt panicked with, to raise again
	// The outcome, set by finish (done).
	done bool
	resp *portico.Response
	idx  int
	err  error

	alive atomic.Bool // an attempt of a stream showed progress (a chunk, or a portico.Progress report)

	mu     sync.Mutex // guards winner and live
	winner int        // the attempt that won (answered, or its chunk reached the caller); -1 none yet, -2 none ever
	live   []*attempt // attempts running
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
	r.start(false)
	r.loop()
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.resp, r.idx, r.afterSent(r.resp, r.err)
}

// loop receives the attempts' ends and sends the hedges due until the
// race is done: an answer or a stop.
func (r *race) loop() {
	for !r.done {
		select {
		case <-r.due:
			r.due = nil
			r.hedge()
		case at := <-r.results:
			r.ended(at)
		}
	}
}

// hedge sends the hedge that fell due, while an attempt still runs, fewer
// than MaxInFlight do, none answered and no stream showed a sign of
// progress.
func (r *race) hedge() {
	r.mu.Lock()
	due := r.winner == -1 && len(r.live) > 0
	r.mu.Unlock()
	if due && r.running < r.h.maxInFlight && !r.alive.Load() {
		r.start(true)
	}
}

// ended settles the end of at: the race is done after an answer, a
// panic, a stop, or a failure with no attempt left.
func (r *race) ended(at *attempt) {
	r.running--
	res := &at.res
	switch w := r.winnerIs(); {
	case at.panicked != nil:
		r.panicked = at.panicked
		r.finish(nil, -1, nil)
	case w >= 0 && w != at.i: // the winner is still running
		res.Lost = true
		r.plan.Ended(r.ctx, at.i, &at.a, res)
	case res.Err == nil || res.Delivered:
		r.plan.Ended(r.ctx, at.i, &at.a, res)
		r.finish(res.Response, at.i, res.Err)
	default:
		r.failed(at)
	}
}

// failed settles at, which failed: the Plan may stop the race, else the
// next attempt follows at once when none other runs.
func (r *race) failed(at *attempt) {
	r.last = at.res.Err
	r.note(&at.res)
	if stop := r.plan.Ended(r.ctx, at.i, &at.a, &at.res); stop != nil {
		r.finish(nil, -1, stop)
	} else if r.running == 0 {
		r.start(false)
	}
}

// start prepares the next attempt, a hedge or not (see prepare), begins
// it, and arms the timer for the hedge that may follow it.
func (r *race) start(hedge bool) {
	at := r.prepare(hedge)
	if at == nil {
		return
	}
	r.begin(at)
	if d, ok := r.delay(at); ok {
		r.due = time.After(d) // collected unstopped once the race is done
	}
}

// prepare has the Plan prepare the next attempt, a hedge (charged to the
// budget) or not, and returns it; nil when the Plan has none: when it stops
// the race, or has no attempt to follow a failure, the race is done with
// that error or the last attempt's; when it has no hedge, the running
// attempts go on.
func (r *race) prepare(hedge bool) *attempt {
	var charge func(string) bool
	if hedge {
		charge = r.charge
	}
	at := &attempt{r: r, i: r.next, hedge: hedge}
	ok, stop := r.plan.Next(r.ctx, at.i, charge, &at.a)
	if ok && stop == nil {
		r.next++
		return at
	}
	if stop != nil || !hedge {
		r.finish(nil, -1, cmp.Or(stop, r.last))
	}
	return nil
}

// begin starts at on a goroutine of its own under a cancelable context,
// unless another attempt won (an answer, a chunk) while the Plan prepared
// it (see unsent).
func (r *race) begin(at *attempt) {
	at.ctx, at.cancel = context.WithCancelCause(cmp.Or(at.a.Context, r.ctx))
	at.start = time.Now()
	r.running++
	r.mu.Lock()
	late := r.winner != -1
	if !late {
		r.live = append(r.live, at)
	}
	r.mu.Unlock()
	if late {
		r.unsent(at)
		return
	}
	if at.hedge {
		portico.Observe(r.ctx, portico.Event{Kind: portico.EventHedge, Route: at.a.Destination, Attempt: at.i,
			Delay: at.start.Sub(r.started), Reason: "sent"})
	}
	r.started = at.start
	at.watchProgress()
	go at.run()
}

// unsent ends at, which another attempt's win overtook before it was sent:
// lost and not sent, its hedge's token back, its end in the race's results
// (which have room for every attempt in flight).
func (r *race) unsent(at *attempt) {
	at.cancel(errLost)
	at.res.Err = &portico.Error{Class: portico.Canceled, NotSent: true, Reason: "not sent", Err: errLost}
	at.res.Unsent = true
	if at.hedge {
		r.refund(at.a.Destination, at.res.Err)
	}
	r.results <- at
}

// delay returns the wait before the hedge after at, and false when no
// hedge may follow it (see Hedger.delay).
func (r *race) delay(at *attempt) (time.Duration, bool) {
	return r.h.delay(r.ctx, at.a.Latency, at.start)
}

// finish cancels the attempts still running, waits for them (reporting each
// to the plan as lost), and sets the race's outcome.
func (r *race) finish(resp *portico.Response, i int, err error) {
	r.mu.Lock()
	if r.winner == -1 {
		r.winner = i
		if i < 0 {
			r.winner = -2 // ended without a winner: refuse every chunk
		}
	}
	r.cancelOthers(i)
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
		r.panicked = cmp.Or(r.panicked, at.panicked)
	}
	r.done, r.resp, r.idx, r.err = true, resp, i, err
}

// cancelOthers cancels the live attempts but attempt i: they lost. r.mu
// is held.
func (r *race) cancelOthers(i int) {
	for _, at := range r.live {
		if at.i != i {
			at.cancel(errLost)
		}
	}
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
	if resp != nil || !portico.NothingSent(err) {
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
