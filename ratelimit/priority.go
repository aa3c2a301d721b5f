package ratelimit

import (
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// DefaultAging is the Queue.Aging of a Config whose Aging is zero: a
// queued call is served as the priority above its own after 10 s in the
// queue, so a Sheddable call waits at most 20 s to rank as Critical.
const DefaultAging = 10 * time.Second

// rank is w's priority at now: its request's, raised one level for each
// Queue.Aging it has waited, up to Critical (aging against starvation).
func (q *Queue) rank(w *waiter, now time.Duration) portico.Priority {
	p := w.prio.Level()
	if n := (now - w.enq) / q.Aging; n > 0 {
		p = min(portico.Critical, p+portico.Priority(min(n, 2)))
	}
	return p
}

// nextStep returns when the next of e's waiters ranks one priority higher
// than at now (see Queue.rank); ok is false when all rank Critical. The
// caller holds e.mu.
func (e *entry) nextStep(q *Queue, now time.Duration) (at time.Duration, ok bool) {
	for _, w := range e.queue {
		if q.rank(w, now) == portico.Critical {
			continue
		}
		step := mono.Add(w.enq, ((now-w.enq)/q.Aging+1)*q.Aging)
		if !ok || step < at {
			at, ok = step, true
		}
	}
	return at, ok
}

// before reports whether waiter x is served before y at now: the higher
// rank first, and within a rank q's Order (see better).
func (q *Queue) before(x, y *waiter, now time.Duration) bool {
	if rx, ry := q.rank(x, now), q.rank(y, now); rx != ry {
		return rx > ry
	}
	return q.better(x, y, now)
}

// next returns the index of the waiter served first at now; the queue is
// not empty. The caller holds e.mu. The queue is short (Queue.Size), so a
// scan is fine.
func (e *entry) next(q *Queue, now time.Duration) int {
	return pick(e.queue, func(x, y *waiter) bool { return q.before(x, y, now) })
}

// pick returns the index of the first of ws (not empty) by goesFirst,
// the earliest of equals.
func pick(ws []*waiter, goesFirst func(x, y *waiter) bool) int {
	best := 0
	for i := 1; i < len(ws); i++ {
		if goesFirst(ws[i], ws[best]) {
			best = i
		}
	}
	return best
}

// evict makes room in e's full queue for a call of priority p: it sheds
// the waiter of the lowest priority of its own (served last among those)
// when that priority is below p, and reports whether it did. Aging orders
// service only: a waiter ranked up by its wait is still shed before a
// higher priority, so a priority is refused only while every lower one
// is. The shed waiter wakes ungranted and fails as shed (see queueFor).
// The caller holds e.mu.
func (e *entry) evict(q *Queue, p portico.Priority, now time.Duration) bool {
	if e.queued() == 0 {
		return false
	}
	last := pick(e.queue, func(y, x *waiter) bool { // y is shed before x
		px, py := x.prio.Level(), y.prio.Level()
		return py < px || py == px && q.before(x, y, now)
	})
	w := e.queue[last]
	if w.prio.Level() >= p.Level() {
		return false
	}
	e.removeAt(last)
	close(w.ready)
	return true
}

// slots is the cap on e's calls in flight for a call of priority p: the
// in-flight cap less Config.Reserve for each priority above p (see
// portico.Priority.Slots), 0 for none. The caller holds e.mu.
func (l *Limiter) slots(e *entry, p portico.Priority) int {
	return p.Slots(l.maxInFlight(e), l.cfg.Reserve)
}
