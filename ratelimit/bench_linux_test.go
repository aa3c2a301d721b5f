//go:build linux

package ratelimit

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/portico-llm/portico"
	"golang.org/x/time/rate"
)

// threadCPU returns the calling thread's CPU time in nanoseconds
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
func threadCPU() int64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// BenchmarkPairedCPU measures the happy-path admission and a bare
// rate.Limiter.Allow in alternating blocks of 1,000 calls on one locked OS
// thread, in that thread's CPU time: on a machine shared with other work the
// wall-clock ns/op of the two benchmarks above swing with the load, while
// this pair stays comparable.
func BenchmarkPairedCPU(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l := benchLimiter(b)
	resp := &portico.Response{Usage: portico.Usage{InputTokens: 7, OutputTokens: 10}}
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil }))
	lim := rate.NewLimiter(1e9, 1e9)
	ctx := context.Background()
	m.Generate(ctx, benchReq)
	const block = 1000
	var tAdmit, tRate, n int64
	b.ResetTimer()
	for b.Loop() {
		t0 := threadCPU()
		for range block {
			m.Generate(ctx, benchReq)
		}
		t1 := threadCPU()
		for range block {
			lim.Allow()
		}
		t2 := threadCPU()
		tAdmit += t1 - t0
		tRate += t2 - t1
		n += block
	}
	b.ReportMetric(float64(tAdmit)/float64(n), "admit-cpu-ns/op")
	b.ReportMetric(float64(tRate)/float64(n), "rate-allow-cpu-ns/op")
}
