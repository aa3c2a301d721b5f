package redisstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/portico-llm/portico/internal/mono"
)

// Settles are sent after the call, from a bounded queue (see Settles and
// their delay in the package documentation).
const (
	// maxPending is the most settles a Store holds unsent; beyond it a
	// settle is sent by its caller, at once.
	maxPending = 1024
	// settleBatch is the most settles one script applies.
	settleBatch = 64
	// carryMax is the most settles an admission carries (Store.Admit),
	// on the caller's path: each costs its script a read and a write of
	// its key, unless the admission takes on that key too.
	carryMax = 16
	// settleLinger is how long a settle waits in the queue for an
	// admission to carry it before the sender sends it in a script of
	// its own.
	settleLinger = 2 * time.Millisecond
)

// pendingSettle is one settle in the queue: the Limiter's key and the
// sixteen numbers of settleScript.
type pendingSettle struct {
	key    string
	nums   [16]float64
	queued time.Duration // mono.Now when queued
	at     time.Time     // queued; read only by the test hook
}

// settle queues op, starting the sender when none runs, or sends it now
// when the queue is full or the Store closed.
func (s *Store) settle(ctx context.Context, op *pendingSettle) error {
	if s.settled != nil {
		op.at = time.Now()
	}
	op.queued = mono.Now()
	s.flushMu.Lock()
	if s.closed || len(s.pending) >= maxPending {
		s.flushMu.Unlock()
		ops := []pendingSettle{*op}
		err := s.sendSettles(ctx, ops)
		s.applied(ops, err)
		return err
	}
	s.pending = append(s.pending, *op)
	start := !s.sending
	if start {
		s.sending = true
		s.senders.Add(1)
	}
	s.flushMu.Unlock()
	if start {
		go s.sendPending()
	}
	return nil
}

// carry moves into buf, and returns, up to cap(buf) settles of the queue,
// the oldest first, for an admission to apply: none during an outage
// (the admission would fail them at once) or after Close.
func (s *Store) carry(buf []pendingSettle) []pendingSettle {
	if !s.Available() {
		return buf
	}
	s.flushMu.Lock()
	n := min(len(s.pending), cap(buf))
	buf = append(buf, s.pending[:n]...)
	s.pending = s.pending[:copy(s.pending, s.pending[n:])]
	s.flushMu.Unlock()
	return buf
}

// sendPending sends the queue, settleBatch settles per script (one on a
// Cluster or a Ring, where a script's keys share a slot), until it is
// empty, then ends: no goroutine outlives the work. On a Store that runs
// admissions a settle first waits settleLinger for one to carry it (not
// after Close).
func (s *Store) sendPending() {
	defer s.senders.Done()
	batch := make([]pendingSettle, 0, settleBatch)
	var sent []pendingSettle
	most := settleBatch
	if s.multi {
		most = 1
	}
	for {
		s.flushMu.Lock()
		n := min(len(s.pending), most)
		if n == 0 {
			s.sending = false
			s.flushMu.Unlock()
			return
		}
		if wait := s.pending[0].queued + s.linger - mono.Now(); wait > 0 && !s.closed && s.admits.Load() {
			s.flushMu.Unlock()
			s.sleep(wait)
			continue
		}
		batch = append(batch[:0], s.pending[:n]...)
		s.pending = s.pending[:copy(s.pending, s.pending[n:])]
		s.flushMu.Unlock()
		sent = append(sent[:0], batch...)
		err := s.sendSettles(context.Background(), merge(sent))
		if err != nil {
			s.lost(n, err)
		}
		s.applied(batch, err)
	}
}

// sleep waits d, or until Close. Only the one sender calls it.
func (s *Store) sleep(d time.Duration) {
	if s.wait == nil {
		s.wait = time.NewTimer(d)
	} else {
		s.wait.Reset(d)
	}
	select {
	case <-s.wait.C:
	case <-s.closing:
		s.wait.Stop()
	}
}

// lost logs n settles whose script failed: they may or may not have been
// applied.
func (s *Store) lost(n int, err error) {
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "redisstore: settles lost (refunds: stricter; surcharges: looser)",
		slog.Int("settles", n), slog.String("err", err.Error()))
}

// sendSettles applies ops in one settleScript.
func (s *Store) sendSettles(ctx context.Context, ops []pendingSettle) error {
	keys := make([]string, len(ops), len(ops)+1)
	arg := make([]byte, 0, len(ops)*len(ops[0].nums)*8)
	for i := range ops {
		keys[i] = s.key("rl", ops[i].key)
		arg = packNums(arg, ops[i].nums[:]...)
	}
	keys = append(keys, s.opKey(ops[0].key))
	return s.do(ctx, func(ctx context.Context) error {
		return settleScript.Run(ctx, s.c, keys, string(arg), s.opTTL).Err()
	})
}

// applied tells the test hook of ops, just applied, or, after err, of
// unknown outcome (a zero applied time): a script whose reply was late or
// lost may have run all the same.
func (s *Store) applied(ops []pendingSettle, err error) {
	if s.settled != nil {
		now := time.Now()
		if err != nil {
			now = time.Time{}
		}
		for i := range ops {
			s.settled(ops[i].key, ops[i].nums[4], ops[i].at, now)
		}
	}
}

// merge folds each settle of ops into the last settle before it on the
// same key when both carry no provider view, have the same limits and
// move the level the same way (both refunds, or both surcharges), and
// returns the settles left, in order. One script applies a batch at one
// instant of the server's clock, and two adjacent refunds capped at the
// burst (two surcharges floored at minus a period's quota) leave the level
// where their sum does: the key ends where the settles one by one would
// have left it, at the cost of one. A settle is never folded past another
// on its key: a surcharge moved ahead of a refund capped at the burst
// would be forgiven in part.
func merge(ops []pendingSettle) []pendingSettle {
	out := ops[:0]
	for _, op := range ops {
		if o := lastOn(out, op.key); o != nil && foldable(o, &op) {
			o.nums[4] += op.nums[4]
			o.nums[15] += op.nums[15] // requests back: a sum capped at the burst, too
			continue
		}
		out = append(out, op)
	}
	return out
}

// lastOn returns the last settle of ops on key, or nil.
func lastOn(ops []pendingSettle, key string) *pendingSettle {
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].key == key {
			return &ops[i]
		}
	}
	return nil
}

// foldable reports whether op may be folded into o, the settle before it
// on its key: neither carries a view, their limits are the same, and
// they move the level the same way.
func foldable(o, op *pendingSettle) bool {
	noView := o.nums[7] == 0 && o.nums[11] == 0 && op.nums[7] == 0 && op.nums[11] == 0
	return noView && [4]float64(o.nums[:4]) == [4]float64(op.nums[:4]) && o.nums[5] == op.nums[5] &&
		(o.nums[4] > 0) == (op.nums[4] > 0)
}

// Close sends the settles queued and makes every later one synchronous
// (sent by its caller). It returns once the queue is empty, sent or lost:
// at most ceil(maxPending/settleBatch) operations on one server, and one
// per settle queued (up to maxPending) on a Cluster or Ring, where a batch
// is one settle; each operation is bounded by Config.Timeout. It never closes the Client; the other methods keep
// working. Close is safe to call more than once and concurrently.
func (s *Store) Close() error {
	s.flushMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.flushMu.Unlock()
	s.senders.Wait()
	return nil
}

// flush waits until the queue is empty and no settle is under way (tests).
func (s *Store) flush() {
	for {
		s.flushMu.Lock()
		idle := !s.sending && len(s.pending) == 0
		s.flushMu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
