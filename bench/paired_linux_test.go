//go:build linux

package bench

import (
	"context"
	"runtime"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/sony/gobreaker/v2"
)

// BenchmarkPairedCPU runs the happy paths of the benchmarks above in
// alternating blocks of 1,000 calls on one locked OS thread and reports each
// in that thread's CPU time per call: on a machine shared with other work the
// wall-clock ns/op of separate benchmarks swing with the load, while these
// figures, taken side by side, stay comparable. A layer's overhead is its
// figure minus bare's.
func BenchmarkPairedCPU(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := context.Background()
	caps := portico.Capabilities{ContextWindow: 128000, MaxOutput: 16384, Tools: true}
	cb := gobreaker.NewCircuitBreaker[*portico.Response](gobreaker.Settings{Name: "bench"})
	br := breaker.MustNew(breaker.Config{Name: "a"})
	guarded := br.Wrap(bare)
	group := fallback.MustNew(fallback.Config{Routes: []portico.Route{
		{Name: "a", Model: bare, Capabilities: caps},
		{Name: "b", Model: bare, Capabilities: caps},
	}})
	br2 := breaker.MustNew(breaker.Config{Name: "a"})
	groupBr := fallback.MustNew(fallback.Config{Routes: []portico.Route{
		{Name: "a", Model: br2.Wrap(bare), Health: br2, Capabilities: caps},
		{Name: "b", Model: bare, Capabilities: caps},
	}})
	runs := []struct {
		name string
		f    func()
	}{
		{"bare", func() { bare.Generate(ctx, chatReq) }},
		{"breaker", func() { guarded.Generate(ctx, chatReq) }},
		{"gobreaker", func() {
			cb.Execute(func() (*portico.Response, error) { return bare.Generate(ctx, chatReq) })
		}},
		{"group", func() { group.Generate(ctx, chatReq) }},
		{"group+breaker", func() { groupBr.Generate(ctx, chatReq) }},
	}
	const block = 1000
	cpu := make([]int64, len(runs))
	var n int64
	b.ResetTimer()
	for b.Loop() {
		for i, r := range runs {
			t0 := threadCPU()
			for range block {
				r.f()
			}
			cpu[i] += threadCPU() - t0
		}
		n += block
	}
	for i, r := range runs {
		b.ReportMetric(float64(cpu[i])/float64(n), r.name+"-cpu-ns/op")
	}
}
