package hedge

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestReadingWorlds: a race reads the clock its scheduler's world allows.
// Outside a bubble with no scheduler running, it reads the clock and will
// start a coarse one; with a coarse one running, it takes its reading;
// with a bubble's (exact) one running, it takes a timer (stopped). In a
// bubble, it reads the bubble's clock and runs on an exact one.
func TestReadingWorlds(t *testing.T) {
	var s scheduler
	if _, mode := s.reading(); mode != coarse {
		t.Errorf("outside, none running: mode %d, want coarse (%d)", mode, coarse)
	}
	s.state.Store(coarse)
	s.now.Store(12345)
	if at, mode := s.reading(); mode != coarse || at != 12345 {
		t.Errorf("outside, coarse running: reading %v, mode %d, want the scheduler's 12.345µs, coarse", at, mode)
	}
	s.state.Store(exact)
	if _, mode := s.reading(); mode != stopped {
		t.Errorf("outside, a bubble's running: mode %d, want stopped (%d): a timer", mode, stopped)
	}
	synctest.Test(t, func(t *testing.T) {
		var s scheduler
		if _, mode := s.reading(); mode != exact {
			t.Errorf("in a bubble: mode %d, want exact (%d)", mode, exact)
		}
	})
}

// TestDueNamesItsHolder: in coarse mode, two holders of a slot in turn
// that arm the same hedge get different words, so a scan that read the
// first's cannot swap the second's (it would fire the first's race, which
// ended, and the second would go unhedged): a tick after start + d, plus
// the holder count in ns, modulo 1,024. In exact mode the word is the due
// time itself.
func TestDueNamesItsHolder(t *testing.T) {
	var s scheduler
	s.tick.Store(int64(maxTick))
	const start, d = 7 * time.Second, 100 * time.Millisecond
	due := int64(start + d + maxTick)
	if w1, w2 := s.due(coarse, start, d, 1), s.due(coarse, start, d, 2); w1 != due+1 || w2 != due+2 {
		t.Errorf("coarse words of holders 1 and 2 = %d, %d; want %d, %d", w1, w2, due+1, due+2)
	}
	if w := s.due(coarse, start, d, holderMask+3); w != due+2 {
		t.Errorf("coarse word of holder %d = %d, want %d", holderMask+3, w, due+2)
	}
	if w := s.due(exact, start, d, 1); w != int64(start+d) {
		t.Errorf("exact word = %d, want %d", w, int64(start+d))
	}
}
