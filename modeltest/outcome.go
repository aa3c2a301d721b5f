package modeltest

import (
	"cmp"
	"context"
	"time"

	"github.com/portico-llm/portico"
)

// Outcome is what a [Fake] does on one call: how long it takes, what it
// streams, and whether it answers or fails. In order: wait TTFT and deliver
// the first chunk; wait ChunkGap before each further chunk; with Stall, stop
// after StallAfter chunks and block until ctx is done; wait until Latency has
// passed since the call started; return Err, or else a copy of Response.
//
// The chunks are Chunks, or Response.Text split after each space ("a b c"
// streams "a ", "b ", "c"). The schedule is the same whether the request
// streams or not; only one with OnChunk set receives the chunks, and with Err
// set the call fails after them. Every wait selects on ctx, returning
// [portico.FromContext]'s error, so the fake honours cancellation inside a
// testing/synctest bubble. The zero Outcome answers at once with an empty
// Response whose FinishReason is stop.
type Outcome struct {
	// Response is the answer, copied per call (the caller owns its copy); nil
	// means an empty answer with FinishReason stop. When its Model is empty the
	// copy's Model is the request's.
	Response *portico.Response
	// Err, when non-nil, is returned instead of a Response, after the chunks (if
	// any) and the waits. It is returned as is, shared by every call that plays
	// this Outcome.
	Err error
	// TTFT is the delay before the first chunk, in wall time; 0 means none.
	TTFT time.Duration
	// ChunkGap is the delay between consecutive chunks; 0 means none.
	ChunkGap time.Duration
	// Latency is the least total duration of the call, measured from its start;
	// the call waits at the end for whatever the chunk schedule left of it. 0
	// means no minimum.
	Latency time.Duration
	// Chunks, when non-nil, are the streamed fragments. For the Model contract to
	// hold they must concatenate to Response.Text; a test of a misbehaving model
	// may break that on purpose.
	Chunks []string
	// Stall, when true, makes the call deliver StallAfter chunks and then block
	// until ctx is done (a stream that stops sending: the case for an
	// inter-token timeout).
	Stall bool
	// StallAfter is how many chunks are delivered before a stall; 0 stalls before
	// the first token.
	StallAfter int
}

// Answer returns an Outcome that answers text at once with FinishReason stop and
// Usage.OutputTokens ceil(len(text)/4), the [portico.CharEstimator] rule.
func Answer(text string) Outcome {
	return Outcome{Response: &portico.Response{
		Text:         text,
		FinishReason: portico.FinishStop,
		Usage:        portico.Usage{OutputTokens: (len(text) + 3) / 4},
	}}
}

// Fail returns an Outcome that returns err at once.
func Fail(err error) Outcome { return Outcome{Err: err} }

// chunker walks the chunks of an Outcome without allocating.
type chunker struct {
	list []string
	text string
	i    int
}

func newChunker(o *Outcome) chunker {
	c := chunker{list: o.Chunks}
	if o.Chunks == nil && o.Response != nil {
		c.text = o.Response.Text
	}
	return c
}

// next returns the next chunk, or false when there is none left.
func (c *chunker) next() (string, bool) {
	if c.list != nil {
		if c.i >= len(c.list) {
			return "", false
		}
		c.i++
		return c.list[c.i-1], true
	}
	if c.i >= len(c.text) {
		return "", false
	}
	rest := c.text[c.i:]
	n := len(rest)
	for j := 0; j < len(rest); j++ {
		if rest[j] == ' ' {
			n = j + 1
			break
		}
	}
	c.i += n
	return rest[:n], true
}

// sleeper waits on one reusable timer, selecting on ctx.
type sleeper struct{ t *time.Timer }

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if s.t == nil {
		s.t = time.NewTimer(d)
	} else {
		s.t.Reset(d)
	}
	select {
	case <-s.t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *sleeper) stop() {
	if s.t != nil {
		s.t.Stop()
	}
}

// play runs o's schedule for req and returns its result.
func (o *Outcome) play(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	timed := o.TTFT > 0 || o.ChunkGap > 0 || o.Stall
	if req.OnChunk != nil || timed || o.Latency > 0 {
		if err := o.stream(ctx, req, timed); err != nil {
			return nil, err
		}
	}
	if o.Err != nil {
		return nil, o.Err
	}
	r := portico.Response{FinishReason: portico.FinishStop}
	if o.Response != nil {
		r = *o.Response
	}
	r.Model = cmp.Or(r.Model, req.Model)
	return &r, nil
}

// stream runs the timed part of the schedule and delivers the chunks.
func (o *Outcome) stream(ctx context.Context, req *portico.Request, timed bool) error {
	var start time.Time
	if o.Latency > 0 {
		start = time.Now()
	}
	var s sleeper
	defer s.stop()
	if req.OnChunk != nil || timed {
		ch := newChunker(o)
		for n := 0; ; n++ {
			if o.Stall && n == o.StallAfter {
				<-ctx.Done()
				return portico.FromContext(ctx)
			}
			text, ok := ch.next()
			if !ok {
				break
			}
			d := o.ChunkGap
			if n == 0 {
				d = o.TTFT
			}
			if s.sleep(ctx, d) != nil {
				return portico.FromContext(ctx)
			}
			if req.OnChunk != nil {
				if err := req.OnChunk(portico.Chunk{Text: text}); err != nil {
					return err
				}
			}
		}
		if o.Stall {
			<-ctx.Done()
			return portico.FromContext(ctx)
		}
	}
	if o.Latency > 0 {
		if s.sleep(ctx, o.Latency-time.Since(start)) != nil {
			return portico.FromContext(ctx)
		}
	}
	return nil
}
