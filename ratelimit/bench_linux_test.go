//go:build linux

package ratelimit

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/cputime"
	"golang.org/x/time/rate"
)

// BenchmarkPairedCPU measures the happy-path admission and a bare
// rate.Limiter.Allow in alternating blocks of 1,000 calls on one locked OS
// thread, in that thread's CPU time: on a machine shared with other work the
// wall-clock ns/op of the two benchmarks above swing with the load, while
// this pair stays comparable. It reports the mean CPU time per call of each
// and ratio-median, the median over block pairs of admission CPU over
// rate.Allow CPU, which a burst of load on one block does not move.
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
	var ratios []float64
	b.ResetTimer()
	for b.Loop() {
		t0 := cputime.Thread()
		for range block {
			m.Generate(ctx, benchReq)
		}
		t1 := cputime.Thread()
		for range block {
			lim.Allow()
		}
		t2 := cputime.Thread()
		tAdmit += t1 - t0
		tRate += t2 - t1
		n += block
		ratios = append(ratios, float64(t1-t0)/float64(max(t2-t1, 1)))
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(tAdmit)/float64(n), "admit-cpu-ns/op")
	b.ReportMetric(float64(tRate)/float64(n), "rate-allow-cpu-ns/op")
	b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
}

// BenchmarkPairedParallelCPU is BenchmarkPairedCPU with GOMAXPROCS goroutines
// calling at once, each on its own locked OS thread, in alternating rounds of
// 2,000 calls per goroutine: the happy-path admission on one key shared by
// all (same-key) or on a key per goroutine (own-key), and rate.Limiter.Allow
// on one Limiter shared by all or one per goroutine. It reports CPU time per
// call summed over the threads (contention shows as extra CPU: a lock's cache
// line moving between cores, spinning) and wall time per call (which on a
// loaded machine depends on how many cores the goroutines actually got).
func BenchmarkPairedParallelCPU(b *testing.B) {
	p := runtime.GOMAXPROCS(0)
	const block = 2000
	// round runs f(i, n) for n calls on goroutine i of p, started together,
	// and returns the CPU time summed over their threads and the wall time.
	round := func(f func(i, n int)) (cpu, wall int64) {
		var wg sync.WaitGroup
		var total atomic.Int64
		start := make(chan struct{})
		for i := range p {
			wg.Go(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				<-start
				t0 := cputime.Thread()
				f(i, block)
				total.Add(cputime.Thread() - t0)
			})
		}
		w0 := time.Now()
		close(start)
		wg.Wait()
		return total.Load(), time.Since(w0).Nanoseconds()
	}
	resp := &portico.Response{Usage: portico.Usage{InputTokens: 7, OutputTokens: 10}}
	ctx := context.Background()
	for _, shared := range []bool{true, false} {
		name := "own-key"
		if shared {
			name = "same-key"
		}
		b.Run(name, func(b *testing.B) {
			l := benchLimiter(b)
			m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil }))
			reqs := make([]*portico.Request, p)
			lims := make([]*rate.Limiter, p)
			for i := range p {
				reqs[i], lims[i] = benchReq, rate.NewLimiter(1e9, 1e9)
				if !shared {
					reqs[i] = benchReq.Clone()
					reqs[i].Identity.ClientKey = "c" + strconv.Itoa(i)
					lims[i] = rate.NewLimiter(1e9, 1e9)
				} else {
					lims[i] = lims[0]
				}
				m.Generate(ctx, reqs[i])
			}
			var cpuA, wallA, cpuR, wallR, n int64
			for b.Loop() {
				c, w := round(func(i, n int) {
					for range n {
						m.Generate(ctx, reqs[i])
					}
				})
				cpuA, wallA = cpuA+c, wallA+w
				c, w = round(func(i, n int) {
					for range n {
						lims[i].Allow()
					}
				})
				cpuR, wallR = cpuR+c, wallR+w
				n += int64(block * p)
			}
			b.ReportMetric(float64(cpuA)/float64(n), "admit-cpu-ns/op")
			b.ReportMetric(float64(cpuR)/float64(n), "rate-allow-cpu-ns/op")
			b.ReportMetric(float64(wallA)/float64(n), "admit-wall-ns/op")
			b.ReportMetric(float64(wallR)/float64(n), "rate-allow-wall-ns/op")
		})
	}
}
