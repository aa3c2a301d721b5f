package bench

import (
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"
)

// side is one of the calls an interleaved benchmark compares.
type side struct {
	name string
	call func()
}

// figures are one side's per-call costs in an interleaved run: the median
// over rounds of the wall-clock time, the process CPU time (every
// goroutine's, the collector's and an in-memory server's included) and
// the calling thread's CPU time per call, and the mean allocations per
// call over a separate count of calls.
type figures struct {
	wall, cpu, thread, allocs float64
	perRound                  []float64 // wall time per call in each round
}

// interleave runs the sides in turn, block calls each, b.N rounds, the
// order reversed every other round so that neither side always follows
// the other, and returns each side's figures. Timing the sides in the same
// rounds keeps a machine's drift, which moves whole runs by half on a
// shared host, out of their ratio. Allocations are counted afterwards
// over allocRuns calls of each side (runtime.MemStats, as -benchmem).
func interleave(b *testing.B, block, allocRuns int, sides ...side) []figures {
	b.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, s := range sides {
		s.call() // warm: connections, caches, the first call's lazy state
	}
	walls := make([][]float64, len(sides))
	cpus := make([][]float64, len(sides))
	threads := make([][]float64, len(sides))
	order := make([]int, len(sides))
	for round := 0; b.Loop(); round++ {
		for i := range order {
			order[i] = i
		}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			h0, c0, t0 := threadCPU(), processCPU(), time.Now()
			for range block {
				sides[i].call()
			}
			wall, cpu, thread := time.Since(t0), processCPU()-c0, threadCPU()-h0
			walls[i] = append(walls[i], float64(wall.Nanoseconds())/float64(block))
			cpus[i] = append(cpus[i], float64(cpu)/float64(block))
			threads[i] = append(threads[i], float64(thread)/float64(block))
		}
	}
	b.StopTimer()
	out := make([]figures, len(sides))
	for i, s := range sides {
		out[i] = figures{wall: median(walls[i]), cpu: median(cpus[i]), thread: median(threads[i]), allocs: allocsPer(allocRuns, s.call), perRound: walls[i]}
	}
	return out
}

// roundRatio is the median over rounds of a's wall time per call over
// b's: the ratio of two sides measured side by side.
func roundRatio(a, b figures) float64 {
	r := make([]float64, len(a.perRound))
	for i := range r {
		r[i] = a.perRound[i] / b.perRound[i]
	}
	return median(r)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// allocsPer returns the mean heap allocations per call of f over n calls,
// every goroutine's (an in-memory server's too), as -benchmem counts them,
// with the collector off: a collection empties net/http's pools, and the
// calls after it allocate again what the pools held, a few allocations
// more or less from one count to the next.
func allocsPer(n int, f func()) float64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		f()
	}
	runtime.ReadMemStats(&m1)
	return float64(m1.Mallocs-m0.Mallocs) / float64(n)
}
