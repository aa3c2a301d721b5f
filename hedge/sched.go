package hedge

import (
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico/internal/mono"
	"github.com/portico-llm/portico/internal/slots"
)

// The scheduler's tick: a sixteenth of the delay it waits on, within
// [minTick, maxTick]; it stops after idleTicks ticks with no race.
const (
	minTick   = 100 * time.Microsecond
	maxTick   = 5 * time.Millisecond
	idleTicks = 4
	// holderMask bounds the holder count a coarse due time adds (see
	// scheduler.due).
	holderMask = 1<<10 - 1
)

// The states of a scheduler.
const (
	stopped int32 = iota
	coarse        // outside any bubble: races read the clock it publishes
	exact         // in a testing/synctest bubble: races read the clock
)

// The words of a free slot and of one held by a race that is not armed;
// any other word is an armed race's due time, on the mono clock (an
// attempt's start and a positive delay are never both zero).
const (
	slotFree = slots.Free
	slotHeld = slots.Held
)

// scheduler sends the hedges of a Hedger's races, so that a race that
// answers before its delay costs no timer and no clock read: one goroutine,
// started by the first race that needs it and stopping after idleTicks
// ticks without one, wakes every tick (and at each due time), publishes its
// reading of the clock for the races to start from, and fires each armed
// race whose due time passed. A race holds one of its slots (claimed with a
// CAS) and its state there, reused; arming stores the due time in the
// slot's word, and exactly one of the race's disarm and the scheduler's
// fire moves it back from that due time (see race.disarm, attempt.fire).
//
// The goroutine belongs to the world of the race that started it: outside
// any bubble (coarse: races read the clock it publishes, so a hedge goes
// up to one tick late), or in a bubble (exact: races read their bubble's
// clock, and a race outside a bubble takes a timer of its own).
type scheduler struct {
	state atomic.Int32
	now   atomic.Int64                  // the reading of the clock at the last wake (coarse)
	tick  atomic.Int64                  // how long the goroutine sleeps at most, from now
	want  atomic.Int64                  // the shortest tick asked for since the last wake; 0 none
	wake  atomic.Pointer[chan struct{}] // an exact one's, while it runs
	slots slots.Table[race]
}

// slot is where one race at a time lives in a scheduler (slots.N races;
// more take a timer each). Its Word is slotFree, slotHeld or an armed
// race's due time; V is the state of its races, reused while reusable (see
// race.reusable), replaced by the holder only while it holds the slot, and
// read by the scheduler after it saw the word armed.
type slot = slots.Slot[race]

// coarseInBubble makes races in a bubble start a coarse scheduler, as
// outside one: for tests of the coarse clock on the bubble's.
var coarseInBubble bool

// tickFor is the tick a delay d asks for.
func tickFor(d time.Duration) time.Duration {
	return min(max(d/16, minTick), maxTick)
}

// reading returns the start of a race on h's clock, and the scheduler mode
// it runs in: coarse, the scheduler's last reading, when a coarse scheduler
// runs; otherwise a reading of the clock, exact in a bubble and coarse (a
// scheduler to start) outside. A race in no bubble while an exact
// scheduler runs gets stopped: it takes a timer.
func (s *scheduler) reading() (time.Duration, int32) {
	if s.state.Load() == coarse {
		return time.Duration(s.now.Load()), coarse
	}
	now := time.Now()
	switch {
	case inBubble(now) && !coarseInBubble:
		return mono.Of(now), exact
	case s.state.Load() == exact:
		return mono.Of(now), stopped
	}
	return mono.Of(now), coarse
}

// clock returns a reading for a race of mode: the scheduler's in coarse
// mode, else the clock's.
func (s *scheduler) clock(mode int32) time.Duration {
	if mode == coarse {
		return time.Duration(s.now.Load())
	}
	return mono.Now()
}

// due returns the time at which a race of mode started at start must be
// hedged after d, as its slot's word: at start + d in exact mode; in
// coarse mode a tick later, start being the scheduler's last reading,
// which the race's true start follows by less than a tick, plus holder
// (the slot's Holders) modulo holderMask+1, in ns. It asks for a shorter
// tick when d needs one.
func (s *scheduler) due(mode int32, start, d time.Duration, holder uint32) int64 {
	if t := int64(tickFor(d)); t < s.tick.Load() {
		for w := s.want.Load(); w == 0 || t < w; w = s.want.Load() {
			if s.want.CompareAndSwap(w, t) {
				break
			}
		}
	}
	at := int64(mono.Add(start, d)) // a Delay of any length, saturated rather than wrapped
	if mode == coarse {
		// Races of one tick share its reading, and so their due times: the
		// holder count added tells one holder's word from the next one's
		// for the same hedge, so that a scan that read the first's cannot
		// swap the second's (see scan). The hedge goes up to a microsecond
		// later.
		at = int64(mono.Add(time.Duration(at), time.Duration(s.tick.Load()+int64(holder&holderMask))))
	}
	if at == slotFree || at == slotHeld { // a bubble's clock may read anything
		at = slotHeld + 1
	}
	return at
}

// start makes sure a goroutine of mode runs after sl was armed: it starts
// one when none does. A start made at the same time by a race of the other
// world is lost, and that race's scheduler then fires sl.
func (s *scheduler) start(mode int32, now time.Duration, d time.Duration) {
	if s.state.Load() != stopped {
		s.poke(mode)
		return
	}
	if !s.state.CompareAndSwap(stopped, mode) {
		s.poke(mode)
		return
	}
	s.now.Store(int64(now))
	s.tick.Store(int64(tickFor(d)))
	var wake chan struct{}
	if mode == exact {
		wake = make(chan struct{}, 1)
		s.wake.Store(&wake)
	}
	go s.run(mode, wake)
}

// poke wakes an exact scheduler, which in a bubble must see at once a race
// armed earlier than it planned, and stop as soon as none is left, or the
// bubble could not end: time stands still once its test returned.
func (s *scheduler) poke(mode int32) {
	if mode != exact {
		return
	}
	if p := s.wake.Load(); p != nil {
		select {
		case *p <- struct{}{}:
		default:
		}
	}
}

// run is the scheduler's goroutine. An exact one stops as soon as no slot
// is held, a coarse one after idleTicks ticks.
func (s *scheduler) run(mode int32, wake chan struct{}) {
	idle, limit := 0, idleTicks
	var timer *time.Timer
	if mode == exact {
		limit = 0
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
	}
	for {
		now := mono.Now()
		s.now.Store(int64(now))
		if w := s.want.Swap(0); w != 0 {
			s.tick.Store(w)
		}
		next, busy := s.scan(now)
		switch {
		case busy:
			idle = 0
		case idle < limit:
			idle++
		default:
			// Stop, unless a race armed since the scan: it saw the state
			// before the Store below, or it sees stopped and starts one.
			if mode == exact {
				s.wake.Store(nil)
			}
			s.state.Store(stopped)
			if next, busy = s.scan(now); !busy || !s.state.CompareAndSwap(stopped, mode) {
				return
			}
			if mode == exact {
				s.wake.Store(&wake)
			}
			idle = 0
		}
		if mode == coarse {
			at := now + time.Duration(s.tick.Load())
			if next != 0 && time.Duration(next) < at {
				at = time.Duration(next)
			}
			time.Sleep(at - now)
			continue
		}
		var tc <-chan time.Time
		if next != 0 {
			if timer == nil {
				timer = time.NewTimer(time.Duration(next) - now)
			} else {
				timer.Reset(time.Duration(next) - now)
			}
			tc = timer.C
		}
		select {
		case <-tc:
		case <-wake:
		}
	}
}

// scan fires the races due by now and returns the earliest due time of
// the others (0: none) and whether any slot is held.
func (s *scheduler) scan(now time.Duration) (next int64, busy bool) {
	for i := range s.slots {
		sl := &s.slots[i]
		w := sl.Word.Load()
		switch {
		case w == slotFree:
			continue
		case w == slotHeld:
		case w <= int64(now):
			// r is loaded before the CAS: once the word is back to held,
			// the holder may release the slot and replace r. A coarse word
			// names its holder (see due), so the CAS fails if the slot
			// changed hands since the word was read. Only the first
			// attempt of a slot's race is armed there.
			if r := sl.V.Load(); sl.Word.CompareAndSwap(w, slotHeld) {
				if r == nil {
					// The slot changed hands between the loads and its new
					// race was armed for the same time: that one is due,
					// and armed only once its race was stored.
					r = sl.V.Load()
				}
				if r != nil {
					go r.first.fire()
				}
			}
		case next == 0 || w < next:
			next = w
		}
		busy = true
	}
	return next, busy
}
