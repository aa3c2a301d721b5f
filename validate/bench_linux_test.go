//go:build linux

package validate

import (
	"runtime"
	"testing"

	"github.com/portico-llm/portico/internal/cputime"
)

// BenchmarkPairedCPU is BenchmarkPaired measured in the thread's CPU time
// rather than wall time, in alternating blocks of 16 runs, so that time the
// thread spends preempted on a shared, loaded machine counts for neither side.
func BenchmarkPairedCPU(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	raw := rawValidator(b)
	v := MustNew(Config{})
	req, resp := benchRequest()
	pipe := func() {
		if err := v.Check(req, resp); err != nil {
			b.Fatal(err)
		}
	}
	// Warm both sides outside the timed loop: the pipeline's first call
	// compiles the schema into its cache (about a millisecond, the
	// metaschema check included), which would otherwise be charged to the
	// pipeline's first few thousand runs.
	raw()
	pipe()
	const block = 16
	var tRaw, tPipe int64
	swap := false
	for b.Loop() {
		swap = !swap
		first, second, tFirst, tSecond := raw, pipe, &tRaw, &tPipe
		if swap {
			first, second, tFirst, tSecond = pipe, raw, &tPipe, &tRaw
		}
		t0 := cputime.Thread()
		for range block {
			first()
		}
		t1 := cputime.Thread()
		for range block {
			second()
		}
		t2 := cputime.Thread()
		*tFirst += t1 - t0
		*tSecond += t2 - t1
	}
	n := float64(b.N * block)
	b.ReportMetric(float64(tRaw)/n, "raw-cpu-ns/op")
	b.ReportMetric(float64(tPipe)/n, "pipeline-cpu-ns/op")
	b.ReportMetric(float64(tPipe)/float64(tRaw), "ratio")
}
