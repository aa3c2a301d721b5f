//go:build linux

// Package cputime reads the calling thread's CPU time, for the paired
// benchmarks that compare a layer with its reference on a shared, loaded
// machine: wall-clock ns/op swing with other work, while the CPU time a locked
// thread spends on each side stays comparable.
package cputime

import (
	"syscall"
	"unsafe"
)

// Thread returns the calling thread's CPU time in nanoseconds
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID)). Callers lock the goroutine to its
// thread (runtime.LockOSThread) for the readings to mean anything.
func Thread() int64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
