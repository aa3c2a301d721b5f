package modeltest

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/portico-llm/portico"
)

// CapacityConfig configures a [CapacityServer]. The zero CapacityConfig is one slot, 10 ms
// per call (100 calls per second), an unbounded queue, answering "ok".
type CapacityConfig struct {
	// Slots is how many calls are served at once (c, the server's concurrency);
	// 0 means 1.
	Slots int
	// ServiceTime is how long each call occupies a slot, in wall time (virtual
	// inside a synctest bubble); 0 means 10 ms. The capacity is Slots /
	// ServiceTime calls per second.
	ServiceTime time.Duration
	// QueueLimit is the most calls that may wait for a slot; a call arriving at a
	// full queue fails at once with [StatusError](503). 0 means unbounded.
	QueueLimit int
	// Response is the answer to each served call, copied per call; nil means
	// "ok" with FinishReason stop.
	Response *portico.Response
	// DropExpired makes the server skip, without serving, a queued call whose
	// caller's context is already done when it reaches the head of the queue,
	// or whose deadline falls less than ServiceTime later, so that served it
	// would finish for nobody: the deadline travels with the request (seed
	// 000's last policy). The caller of a call skipped before its deadline is
	// not told; it waits until its context ends, as for a lost call. False, the
	// default, is a server that does not know who gave up and spends a slot on
	// every call it dequeued.
	//
	// Skipping only calls already expired is not enough with discrete
	// services: under overload the oldest live call, the one dequeued, is the
	// one about to expire, and a call with less than ServiceTime left would be
	// served and wasted. In the overload simulation that alone cost 4 to 30
	// useful answers per second depending on how the deadlines fell on the
	// 10 ms service grid.
	DropExpired bool
}

// CapacityServer is a capacity-limited FIFO server for overload experiments: a
// [portico.Model] with Slots slots and a first-in, first-out
// queue, each call occupying a slot for ServiceTime. A caller whose context ends
// while it waits returns at once with [portico.FromContext]'s error, but its call
// stays in the queue and, unless DropExpired is set, is still served when its turn
// comes: work done for nobody, which is what turns retries under overload into
// metastable failure. [CapacityServer.SetDown] simulates an outage, and
// [CapacityServer.SetSlots] a change of capacity.
//
// CapacityServer runs no goroutine of its own: each service is a time.AfterFunc timer,
// so it needs no Close, leaks nothing and runs on virtual time in a
// testing/synctest bubble. It is safe for concurrent use; inside synctest, use a
// CapacityServer from one bubble only, since its timers belong to the bubble that made
// them.
type CapacityServer struct {
	cfg CapacityConfig

	mu    sync.Mutex
	queue []*job
	head  int
	busy  int
	down  bool
	stats CapacityStats
}

// CapacityStats counts what a [CapacityServer] did. Every call that arrived is, at any
// moment, exactly one of: queued, in service, served (useful or wasted),
// dropped or rejected.
type CapacityStats struct {
	Arrived  int // calls received
	Queued   int // calls waiting for a slot now
	Busy     int // slots in use now
	Useful   int // served calls whose caller was still waiting: goodput
	Wasted   int // served calls whose caller had given up: work done for nobody
	Dropped  int // queued calls skipped because their caller had given up or would have before the service ended (DropExpired)
	Rejected int // calls refused because the queue was full (QueueLimit)
}

type job struct {
	ctx    context.Context
	done   chan struct{} // closed when served or dropped
	useful bool          // set before done is closed: served while ctx was live
}

// NewCapacityServer returns a CapacityServer built from cfg, or an error whose message starts
// with "modeltest:" when Slots, ServiceTime or QueueLimit is negative.
func NewCapacityServer(cfg CapacityConfig) (*CapacityServer, error) {
	if cfg.Slots < 0 || cfg.ServiceTime < 0 || cfg.QueueLimit < 0 {
		return nil, errors.New("modeltest: negative CapacityConfig field")
	}
	cfg.Slots, cfg.ServiceTime = cmp.Or(cfg.Slots, 1), cmp.Or(cfg.ServiceTime, 10*time.Millisecond)
	return &CapacityServer{cfg: cfg}, nil
}

// Generate queues the call and waits until it has been served or ctx is done.
// It returns a copy of CapacityConfig.Response (streamed through req.OnChunk as
// words when set, after service), [StatusError](503) when the queue is full, or
// [portico.FromContext]'s error when ctx ends first; the call then stays queued.
// A nil req fails at once, unqueued, with a [portico.Permanent] error.
func (s *CapacityServer) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if req == nil {
		return nil, errNilRequest
	}
	if ctx.Err() != nil {
		return nil, portico.FromContext(ctx)
	}
	j := &job{ctx: ctx, done: make(chan struct{})}
	s.mu.Lock()
	s.stats.Arrived++
	if s.cfg.QueueLimit > 0 && len(s.queue)-s.head >= s.cfg.QueueLimit {
		s.stats.Rejected++
		s.mu.Unlock()
		return nil, StatusError(503)
	}
	s.queue = append(s.queue, j)
	s.dispatchLocked()
	s.mu.Unlock()
	select {
	case <-j.done:
	case <-ctx.Done():
		select {
		case <-j.done: // served in time; the answer is the caller's
		default:
			return nil, portico.FromContext(ctx)
		}
	}
	if !j.useful {
		return nil, portico.FromContext(ctx)
	}
	o := Outcome{Response: s.cfg.Response}
	if o.Response == nil {
		o = okOutcome
	}
	return o.play(ctx, req)
}

// dispatchLocked starts service for queued calls while slots are free.
func (s *CapacityServer) dispatchLocked() {
	for !s.down && s.busy < s.cfg.Slots && s.head < len(s.queue) {
		j := s.queue[s.head]
		s.queue[s.head] = nil
		s.head++
		if s.head == len(s.queue) {
			s.queue, s.head = s.queue[:0], 0
		} else if s.head >= 1024 && s.head*2 >= len(s.queue) {
			n := copy(s.queue, s.queue[s.head:])
			clear(s.queue[n:])
			s.queue, s.head = s.queue[:n], 0
		}
		if s.cfg.DropExpired && j.ctx.Err() != nil {
			s.stats.Dropped++
			close(j.done)
			continue
		}
		if s.cfg.DropExpired && endsWithin(j.ctx, s.cfg.ServiceTime) {
			// Served, it would finish after its caller gave up. Its done is
			// never closed: the caller returns when its context ends.
			s.stats.Dropped++
			continue
		}
		s.busy++
		time.AfterFunc(s.cfg.ServiceTime, func() { s.finish(j) })
	}
}

// finish completes j's service and starts the next.
func (s *CapacityServer) finish(j *job) {
	s.mu.Lock()
	s.busy--
	if j.ctx.Err() == nil {
		j.useful = true
		s.stats.Useful++
	} else {
		s.stats.Wasted++
	}
	close(j.done)
	s.dispatchLocked()
	s.mu.Unlock()
}

// SetDown starts (true) or ends (false) an outage: while down, the server
// starts no service (calls in service finish), and arrivals keep queueing.
func (s *CapacityServer) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.dispatchLocked()
	s.mu.Unlock()
}

// SetSlots changes the server's concurrency to n slots at once, a capacity
// step: with more, queued calls start at once; with fewer, the calls in
// service finish and no new one starts until fewer than n are busy. It
// panics if n is below 1 (use SetDown for an outage).
func (s *CapacityServer) SetSlots(n int) {
	if n < 1 {
		panic("modeltest: SetSlots below 1")
	}
	s.mu.Lock()
	s.cfg.Slots = n
	s.dispatchLocked()
	s.mu.Unlock()
}

// Stats returns the server's counts now.
func (s *CapacityServer) Stats() CapacityStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Queued = len(s.queue) - s.head
	st.Busy = s.busy
	return st
}

// endsWithin reports whether ctx's deadline falls less than d from now.
func endsWithin(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < d
}
