package retry

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/gap"
	"github.com/portico-llm/portico/internal/mono"
)

// stream watches one streamed attempt: it wraps the caller's OnChunk, records
// whether anything reached the caller, and bounds the attempt (gap.Bound):
// it cancels the attempt's context when the first chunk, or the next one,
// is late (time out on TTFT and on the gap between tokens, not on the
// total), or when the rate floor cuts it. A chunk held back by an inner
// layer and reported with [portico.Progress] counts for the bound like a
// chunk, but is not delivered: the attempt may still be retried.
type stream struct {
	portico.StreamWatch // what reached the caller; the stream is its gate
	r                   *Retrier
	outer               context.Context // the caller's, for the first-chunk event
	start               time.Time       // when the layer received the call
	bound               gap.Bound
	rate                *rateFloor // nil without Timeouts.MinRate
}

// streamAttempt makes one attempt of a streaming request.
func (r *Retrier) streamAttempt(ctx context.Context, req *portico.Request, next portico.Model, start time.Time) (*portico.Response, bool, error) {
	s := &stream{r: r, outer: ctx, start: start}
	actx, stop := r.attemptContext(ctx)
	defer stop()
	actx, cancel := context.WithCancelCause(actx)
	defer cancel(nil)
	actx = s.arm(actx, cancel)
	defer s.disarm()
	resp, err := next.Generate(actx, s.Watch(req, s))
	if cause := s.bound.Settle(); cause != nil && ctx.Err() == nil {
		return nil, s.Delivered(), timeoutError(cause, r.limit(cause), err)
	}
	return resp, s.Delivered(), r.attemptErr(ctx, actx, err)
}

// arm starts the bound and the rate floor the Timeouts ask for, each
// waiting for the first chunk, and returns actx with s.progress installed
// when either runs.
func (s *stream) arm(actx context.Context, cancel context.CancelCauseFunc) context.Context {
	r := s.r
	s.bound.Start(cancel, gap.Limits{First: r.ttft, Gap: r.gap,
		FirstCause: ErrFirstChunkTimeout, GapCause: ErrChunkGapTimeout, Late: errChunkAfterReturn})
	if r.rateWindow > 0 {
		s.rate = &rateFloor{step: r.rateWindow / rateSteps, need: r.rateNeed}
		s.rate.timer = time.AfterFunc(math.MaxInt64, s.measure) // armed by the first chunk
	}
	if !s.watched() {
		return actx
	}
	return portico.ContextWithProgress(actx, s.progress)
}

// disarm stops the timers arm started.
func (s *stream) disarm() {
	s.bound.Settle()
	if s.rate != nil {
		s.rate.timer.Stop()
	}
}

// watched reports whether a timeout or a rate floor watches the stream.
func (s *stream) watched() bool { return s.r.ttft > 0 || s.r.gap > 0 || s.rate != nil }

// limit returns the timeout whose sentinel is cause, the cause of a cut.
func (r *Retrier) limit(cause error) time.Duration {
	switch cause {
	case ErrFirstChunkTimeout:
		return r.ttft
	case ErrChunkGapTimeout:
		return r.gap
	}
	return r.rateWindow
}

// GateChunk runs before each chunk goes on to the caller. A chunk that
// arrives after the bound cut the attempt is refused with the timeout's sentinel
// and never reaches the caller; otherwise it passes, the first one reported
// as an EventFirstChunk.
//
// With a timeout or a rate floor the gate delivers the chunk itself, so
// that both pause while the caller's OnChunk holds it: the time a slow
// consumer takes (a slow client connection) is not the provider's gap, nor
// its rate.
func (s *stream) GateChunk(c portico.Chunk, delivered bool) (bool, error) {
	held := s.watched() // the gate delivers c itself
	if err := s.tick(c, held); err != nil {
		return false, err
	}
	if !delivered {
		portico.Observe(s.outer, portico.Event{Kind: portico.EventFirstChunk, Delay: time.Since(s.start)})
	}
	if !held {
		return true, nil
	}
	return false, s.deliverHeld(c)
}

// deliverHeld delivers c to the caller's OnChunk, the bound and the rate
// floor paused while it holds c; tick held the bound.
func (s *stream) deliverHeld(c portico.Chunk) error {
	var from int64
	if f := s.rate; f != nil {
		from = int64(mono.Now())
		f.holdFrom.Store(from)
	}
	err := s.Deliver(c)
	s.bound.Release()
	if f := s.rate; f != nil {
		f.held.Add(int64(mono.Now()) - from)
		f.holdFrom.Store(0)
	}
	return err
}

// progress is the function installed with [portico.ContextWithProgress]: an
// inner layer holds a chunk back. The bound counts it as a chunk; nothing
// is marked delivered.
func (s *stream) progress(c portico.Chunk) { s.tick(c, false) }

// tick records that the stream advanced, held by the caller's OnChunk
// until deliverHeld releases it with hold; the rate floor counts c. It
// returns the cut's sentinel once the attempt was cut, and an error after
// it returned.
func (s *stream) tick(c portico.Chunk, hold bool) error {
	first, err := s.bound.Sign(hold)
	if err != nil {
		return err
	}
	if f := s.rate; f != nil {
		f.count(c, first)
	}
	return nil
}

// errChunkAfterReturn refuses a chunk sent after the attempt's Generate returned.
var errChunkAfterReturn = errors.New("retry: chunk after the attempt returned")

// rateSteps is the number of steps a rate window is measured in: the floor
// is checked every RateWindow/rateSteps, over the last rateSteps steps.
const rateSteps = 10

// rateFloor measures a streamed attempt's rate for Timeouts.MinRate: the
// tokens of the last rateSteps steps of RateWindow/rateSteps each, counted
// from the first chunk. Chunks add to pending (one atomic add, no
// allocation); the timer's goroutine alone closes each step into the ring
// and checks the window's sum, so the memory is fixed and no lock is taken.
type rateFloor struct {
	step    time.Duration
	need    int64 // tokens a window must bring: MinRate * RateWindow, rounded up
	pending atomic.Int64
	// holdFrom is when the caller's OnChunk took the chunk it holds
	// (mono.Now, ns), 0 when it holds none; held adds up the time it held chunks
	// since the last step closed.
	holdFrom, held atomic.Int64
	timer          *time.Timer
	ring           [rateSteps]int64 // tokens per step; the timer's goroutine only
	steps          int              // steps closed
	sum            int64            // of ring
}

// count adds c's tokens, (len(Text)+len(Reasoning))/4 and at least 1
// (reasoning is output too), to the step; the first chunk starts the step.
func (f *rateFloor) count(c portico.Chunk, first bool) {
	f.pending.Add(max(1, int64(len(c.Text)+len(c.Reasoning))/4))
	if first {
		f.timer.Reset(f.step)
	}
}

// measure closes a step: at the end of each step from the first chunk on it
// moves the step's tokens into the ring and, once a whole window has passed,
// ends the attempt when the window brought fewer than the floor's tokens. A
// step is longer by the time the caller's OnChunk held chunks in it.
func (s *stream) measure() {
	f := s.rate
	if s.bound.Ended() {
		return
	}
	if d := f.pause(); d > 0 {
		f.timer.Reset(d)
		return
	}
	if f.close() {
		s.bound.Cut(ErrSlowStream)
		return
	}
	f.timer.Reset(f.step)
}

// pause is how much longer the step lasts for the caller: the time the
// caller's OnChunk held the stream is the caller's, not the provider's, so
// a step waits while it holds and lasts that much longer; 0 when the step
// may close.
func (f *rateFloor) pause() time.Duration {
	if f.holdFrom.Load() != 0 {
		return f.step
	}
	return time.Duration(f.held.Swap(0))
}

// close moves the step's tokens into the ring and reports whether a whole
// window has passed with fewer than the floor's tokens.
func (f *rateFloor) close() bool {
	n := f.pending.Swap(0)
	i := f.steps % rateSteps
	f.sum += n - f.ring[i]
	f.ring[i] = n
	f.steps++
	return f.steps >= rateSteps && f.sum < f.need
}
