package hedge

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

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
	res      Result
	panicked any         // what Model.Generate panicked with
	sign     atomic.Bool // the stream's first sign of progress came
}

// watchProgress makes a streamed attempt's progress count for the hedge
// delay as a chunk does: an attempt that streams reasoning, or whose chunks
// an inner layer holds back, is not slow to start, so no hedge follows it,
// and its destination's sketch learns the time to that first sign.
func (at *attempt) watchProgress() {
	if at.a.Request.OnChunk != nil {
		at.ctx = portico.ContextWithProgress(at.ctx, func(portico.Chunk) { at.firstSign() })
	}
}

// firstSign records a sign of progress of at's stream, and on the first
// one marks the race alive and teaches the sketch the time to it.
func (at *attempt) firstSign() {
	if at.sign.Load() || !at.sign.CompareAndSwap(false, true) {
		return
	}
	at.r.alive.Store(true)
	at.learn(time.Since(at.start))
}

// run calls at's Model, on a goroutine of its own, recovering a panic for
// the race to raise again: at then wins if it answered first (a hedge the
// Plan prepares meanwhile is not sent, see begin); its end goes to the
// race's results.
func (at *attempt) run() {
	r := at.r
	defer func() {
		at.panicked = recover()
		at.cancel(nil)
		r.mu.Lock()
		r.live = slices.DeleteFunc(r.live, func(x *attempt) bool { return x == at })
		if at.panicked == nil && at.res.Err == nil && r.winner == -1 {
			r.winner = at.i
		}
		r.mu.Unlock()
		r.results <- at
	}()
	at.call()
}

// call calls the attempt's Model and records how it ended.
func (at *attempt) call() {
	req := at.a.Request
	if req.OnChunk != nil {
		req = at.Watch(req, at)
	}
	resp, err := portico.Answer(at.a.Model.Generate(at.ctx, req))
	at.res.Response, at.res.Err = resp, err
	if at.hedge {
		at.r.refund(at.a.Destination, err)
	}
	at.res.Elapsed = time.Since(at.start)
	at.res.Delivered, at.res.CallerFailed = at.Delivered(), at.CallerFailed()
	at.learnEnd(req.OnChunk != nil, err)
}

// learnEnd teaches the sketch the time to at's answer (to the first chunk
// when streaming, see GateChunk), or for an attempt that lost, of this race
// or one around it, with no sign of progress, the time until then: a lower
// bound that keeps the share of slow calls right.
func (at *attempt) learnEnd(streamed bool, err error) {
	switch {
	case err == nil:
		if !streamed {
			at.learn(at.res.Elapsed)
		}
	case !at.sign.Load() && errors.Is(context.Cause(at.ctx), errLost):
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
		r.cancelOthers(at.i)
	}
	won := r.winner == at.i
	r.mu.Unlock()
	if !won {
		return false, errLost
	}
	at.res.TTFT = time.Since(at.start)
	at.firstSign()
	return true, nil
}
