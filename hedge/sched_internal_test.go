package hedge

import (
	"testing"
	"testing/synctest"
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
