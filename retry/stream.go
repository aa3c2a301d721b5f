package retry

import (
	"cmp"
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// The states of a streamed attempt.
const (
	waiting   int32 = iota // no chunk and no progress yet
	streaming              // chunks (or progress) flow
	abandoned              // the first chunk timed out; nothing reached the caller
	stalled                // the gap between chunks timed out
	slow                   // the stream went below Timeouts.MinRate
	finished               // the attempt returned; the watchdog is idle
)

// stream watches one streamed attempt: it wraps the caller's OnChunk, records
// whether anything reached the caller, and runs a watchdog timer (one
// time.AfterFunc per attempt) that cancels the attempt's context when the first
// chunk, or the next one, is late (time out on TTFT and on the gap
// between tokens, not on the total). A chunk held back by an inner layer and
// reported with [portico.Progress] counts for the watchdog like a chunk, but is
// not delivered: the attempt may still be retried.
type stream struct {
	portico.StreamWatch // what reached the caller; the stream is its gate
	r                   *Retrier
	outer               context.Context // the caller's, for the first-chunk event
	start               time.Time       // when the layer received the call
	cancel              context.CancelCauseFunc
	state               atomic.Int32
	last                atomic.Int64 // mono.Now of the last chunk, ns
	timer               *time.Timer  // nil without FirstChunkTimeout and ChunkGapTimeout
	rate                *rateFloor   // nil without Timeouts.MinRate
}

// streamAttempt makes one attempt of a streaming request.
func (r *Retrier) streamAttempt(ctx context.Context, req *portico.Request, next portico.Model, start time.Time) (*portico.Response, bool, error) {
	s := &stream{r: r, outer: ctx, start: start}
	actx, stop := r.attemptContext(ctx)
	defer stop()
	actx, s.cancel = context.WithCancelCause(actx)
	defer s.cancel(nil)
	actx = s.arm(actx)
	defer s.disarm()
	resp, err := next.Generate(actx, s.Watch(req, s))
	st := s.state.Swap(finished)
	if d, sentinel := r.stopped(st); sentinel != nil && ctx.Err() == nil {
		return nil, s.Delivered(), timeoutError(sentinel, d, err)
	}
	return resp, s.Delivered(), r.attemptErr(ctx, actx, err)
}

// arm starts the watchdog and the rate floor the Timeouts ask for, each
// waiting for the first chunk, and returns actx with s.progress installed
// when either runs.
func (s *stream) arm(actx context.Context) context.Context {
	r := s.r
	if r.ttft > 0 || r.gap > 0 {
		s.timer = time.AfterFunc(cmp.Or(r.ttft, math.MaxInt64), s.fire) // MaxInt64: armed by the first chunk
	}
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
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.rate != nil {
		s.rate.timer.Stop()
	}
}

// watched reports whether a watchdog or a rate floor watches the stream.
func (s *stream) watched() bool { return s.timer != nil || s.rate != nil }

// stopped returns the timeout that ended an attempt in state st and its
// sentinel, or a nil sentinel for a state no timeout sets.
func (r *Retrier) stopped(st int32) (time.Duration, error) {
	switch st {
	case abandoned:
		return r.ttft, ErrFirstChunkTimeout
	case stalled:
		return r.gap, ErrChunkGapTimeout
	case slow:
		return r.rateWindow, ErrSlowStream
	}
	return 0, nil
}

// GateChunk runs before each chunk goes on to the caller. A chunk that
// arrives after the watchdog gave up is refused with the timeout's sentinel
// and never reaches the caller; otherwise it passes, the first one reported
// as an EventFirstChunk.
//
// With a watchdog or a rate floor the gate delivers the chunk itself, so
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

// deliverHeld delivers c to the caller's OnChunk, the watchdog and the
// rate floor paused while it holds c; tick marked last holding.
func (s *stream) deliverHeld(c portico.Chunk) error {
	var from int64
	if f := s.rate; f != nil {
		from = int64(mono.Now())
		f.holdFrom.Store(from)
	}
	err := s.Deliver(c)
	now := int64(mono.Now())
	if s.timer != nil {
		s.last.Store(now)
	}
	if f := s.rate; f != nil {
		f.held.Add(now - from)
		f.holdFrom.Store(0)
	}
	return err
}

// holding is stream.last while the caller's OnChunk holds a chunk: the
// watchdog waits for it to return before it measures a gap.
const holding = math.MinInt64

// progress is the function installed with [portico.ContextWithProgress]: an
// inner layer holds a chunk back. The watchdog counts it as a chunk; nothing
// is marked delivered.
func (s *stream) progress(c portico.Chunk) { s.tick(c, false) }

// tick records that the stream advanced: the first tick moves the attempt from
// waiting to streaming and re-arms the watchdog for the gap timeout; every tick
// stamps the time the watchdog measures the gap from, or, with hold, marks
// the stream held by the caller's OnChunk until the gate stamps it on its
// return (one clock read a chunk either way). It returns the timeout's
// sentinel when the watchdog already gave up, and an error after the attempt
// returned.
func (s *stream) tick(c portico.Chunk, hold bool) error {
	first, err := s.advance()
	if err != nil {
		return err
	}
	if f := s.rate; f != nil {
		f.count(c, first)
	}
	if s.timer != nil {
		s.stamp(hold, first)
	}
	return nil
}

// advance moves a waiting attempt to streaming and reports whether it did
// (the first tick); it returns the timeout's sentinel when the watchdog
// already gave up, and errChunkAfterReturn after the attempt returned.
func (s *stream) advance() (bool, error) {
	if s.state.Load() == waiting && s.state.CompareAndSwap(waiting, streaming) {
		return true, nil
	}
	if st := s.state.Load(); st != streaming {
		_, err := s.r.stopped(st)
		return false, cmp.Or(err, errChunkAfterReturn)
	}
	return false, nil
}

// stamp stamps the time the watchdog measures the gap from, or, with hold,
// marks the stream held until the gate stamps it; the first stamp re-arms
// the watchdog for the gap timeout (or stops it, without one).
func (s *stream) stamp(hold, first bool) {
	last := int64(holding) // stamped when the caller's OnChunk returns
	if !hold {
		last = int64(mono.Now())
	}
	s.last.Store(last)
	switch {
	case !first:
	case s.r.gap > 0:
		s.timer.Reset(s.r.gap)
	default:
		s.timer.Stop()
	}
}

// errChunkAfterReturn refuses a chunk sent after the attempt's Generate returned.
var errChunkAfterReturn = errors.New("retry: chunk after the attempt returned")

// fire is the watchdog: it abandons an attempt whose first chunk is late, and
// stalls one whose last chunk is older than the gap timeout (re-arming itself
// when a chunk came since it was set).
func (s *stream) fire() {
	if s.r.ttft > 0 && s.end(waiting, abandoned, ErrFirstChunkTimeout) {
		return
	}
	if s.r.gap > 0 && s.state.Load() == streaming {
		s.checkGap()
	}
}

// checkGap stalls the stream when the gap timeout ran out since its last
// chunk, else re-arms the watchdog for what is left of it (all of it while
// the caller's OnChunk holds a chunk).
func (s *stream) checkGap() {
	left := s.r.gap
	if last := s.last.Load(); last != holding {
		left -= mono.Now() - time.Duration(last)
	}
	if left > 0 {
		s.timer.Reset(left)
		return
	}
	s.end(streaming, stalled, ErrChunkGapTimeout)
}

// end moves the attempt from state from to state to and cancels it with
// cause, reporting whether it did: false when another state came first.
func (s *stream) end(from, to int32, cause error) bool {
	if !s.state.CompareAndSwap(from, to) {
		return false
	}
	s.cancel(cause)
	return true
}

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
	if s.state.Load() != streaming {
		return
	}
	if d := f.pause(); d > 0 {
		f.timer.Reset(d)
		return
	}
	if f.close() {
		s.end(streaming, slow, ErrSlowStream)
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
