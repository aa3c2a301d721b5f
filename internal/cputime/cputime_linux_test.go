//go:build linux

package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestThreadCountsWorkNotSleep: a thread that spins for 20ms of wall time is
// charged most of it, and one that sleeps 20ms is charged almost none.
func TestThreadCountsWorkNotSleep(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const d = 20 * time.Millisecond

	t0 := Thread()
	time.Sleep(d)
	slept := time.Duration(Thread() - t0)
	if slept > d/4 {
		t.Errorf("Thread() advanced %v over a %v sleep, want < %v", slept, d, d/4)
	}

	t0 = Thread()
	for start := time.Now(); time.Since(start) < d; {
	}
	spun := time.Duration(Thread() - t0)
	if spun <= 0 || spun > 2*d {
		t.Errorf("Thread() advanced %v over a %v spin, want in (0, %v]", spun, d, 2*d)
	}
}
