//go:build unix

package route

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user+system CPU time. Benchmarks report CPU
// nanoseconds per op beside wall-clock ns/op, since the build machine is shared
// and wall time includes time spent descheduled.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
