package bench

import "golang.org/x/sys/unix"

// threadCPU returns the calling thread's CPU time in nanoseconds; callers
// lock the goroutine to its thread (runtime.LockOSThread) for the readings
// to mean anything.
func threadCPU() int64 { return clock(unix.CLOCK_THREAD_CPUTIME_ID) }

// processCPU returns the process's CPU time in nanoseconds, every thread's.
func processCPU() int64 { return clock(unix.CLOCK_PROCESS_CPUTIME_ID) }

func clock(id int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}
