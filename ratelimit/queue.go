package ratelimit

import (
	"maps"
	"slices"
	"time"

	"github.com/portico-llm/portico"
)

// waiter is a call queued for a slot of its key's in-flight cap.
type waiter struct {
	ready   chan struct{} // closed when a slot is handed over
	granted bool          // a slot is ours (set under the entry's lock)
	seq     uint64        // arrival order within the Limiter
	enq     time.Duration // when it joined the queue (mono.Now)
	prog    *program      // nil for FCFSCall, or a call without a session
	prio    portico.Priority
}

// program is what the queue remembers of one agent program (session) of one
// key, for FCFSProgram and PLAS.
type program struct {
	arrival  time.Duration // its first call's arrival (mono.Now)
	seq      uint64        // tie-break for equal arrivals
	attained time.Duration // service of its finished calls (slot grant to completion); ATLAS: its longest path
	waited   time.Duration // time its calls spent queued
	active   int           // calls queued or in flight
	lastSeen time.Duration // last arrival or completion (mono.Now)
}

// programs reports whether q's order needs programs (see entry.program).
func (q *Queue) programs() bool { return q.Size > 0 && q.Order != FCFSCall }

// program returns the program of session id, created at now if new, with
// a call arriving at now counted active. Called only when the Order needs
// programs; the caller holds e.mu.
func (e *entry) program(id string, now time.Duration, seq uint64, ttl time.Duration) *program {
	x := e.w()
	p := x.programs[id]
	if p == nil {
		if len(x.programs) >= max(x.progAt, minSweep) {
			e.sweepPrograms(now, ttl)
			x.progAt = 2 * len(x.programs)
		}
		p = &program{arrival: now, seq: seq}
		if x.programs == nil {
			x.programs = make(map[string]*program)
		}
		x.programs[id] = p
	}
	p.active++
	p.lastSeen = now
	return p
}

// sweepPrograms forgets programs with nothing active and unseen for ttl.
func (e *entry) sweepPrograms(now, ttl time.Duration) {
	if e.waits != nil {
		maps.DeleteFunc(e.programs, func(_ string, p *program) bool { return p.active == 0 && now-p.lastSeen >= ttl })
	}
}

// level returns the PLAS priority level of attained service a: level i holds
// [q*(2^i-1), q*(2^(i+1)-1)), and the last level everything beyond.
func level(a, q time.Duration, levels int) int {
	n := int64(a/q) + 1 // a in [q*(n-1), q*n)
	i := 0
	for n > 1 && i < levels-1 {
		n >>= 1
		i++
	}
	return i
}

// better reports whether waiter x goes before y under q's order at
// now. Pure: it reads only the waiters, their programs and the settings.
func (q *Queue) better(x, y *waiter, now time.Duration) bool {
	switch q.Order {
	case FCFSProgram:
		ax, sx := progArrival(x)
		ay, sy := progArrival(y)
		if ax != ay {
			return ax < ay
		}
		if sx != sy {
			return sx < sy
		}
	case PLAS, ATLAS:
		lx, ly := q.plasLevel(x, now), q.plasLevel(y, now)
		if lx != ly {
			return lx < ly
		}
	}
	return x.seq < y.seq
}

func progArrival(w *waiter) (time.Duration, uint64) {
	if w.prog == nil {
		return w.enq, w.seq
	}
	return w.prog.arrival, w.prog.seq
}

// plasLevel is w's level by its program's attained service, or 0 when the
// starvation guard promotes it: (w_prog + w_call) / (d_prog + d_call) >= β,
// with d_call = 0 while it waits (Autellix).
func (q *Queue) plasLevel(w *waiter, now time.Duration) int {
	if w.prog == nil {
		return 0
	}
	p := w.prog
	if p.attained > 0 && float64(p.waited+now-w.enq) >= q.PLAS.Starvation*float64(p.attained) {
		return 0
	}
	return level(p.attained, q.PLAS.Quantum, q.PLAS.Levels)
}

// handoff gives the slot a finishing call releases to waiter i, the one
// served first (see next). The caller holds e.mu.
func (e *entry) handoff(i int, now time.Duration) {
	w := e.queue[i]
	e.removeAt(i)
	w.granted = true
	if w.prog != nil {
		w.prog.waited += now - w.enq
	}
	close(w.ready)
}

func (e *entry) removeAt(i int) { e.queue = slices.Delete(e.queue, i, i+1) }

// remove takes w, which gave up waiting, out of the queue. The caller
// holds e.mu.
func (e *entry) remove(w *waiter) {
	if i := slices.Index(e.queue, w); i >= 0 {
		e.removeAt(i)
	}
}
