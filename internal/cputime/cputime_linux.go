//go:build linux

// Package cputime reads the calling thread's CPU time, for the paired
// benchmarks that compare a layer with its reference on a shared, loaded
// machine: wall-clock ns/op swing with other work, while the CPU time a locked
// thread spends on each side stays comparable.
package cputime

import "syscall"

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not name.
const rusageThread = 1

// Thread returns the calling thread's user plus system CPU time in
// nanoseconds, at the microsecond resolution of getrusage(RUSAGE_THREAD), or
// 0 if the call fails. Callers lock the goroutine to its thread
// (runtime.LockOSThread) and time blocks of calls, not one call, for the
// readings to mean anything.
func Thread() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
