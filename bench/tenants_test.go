package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// liveLimits never refuse a benchmark's calls and keep every key that
// called busy (its request bucket below full) for 10 s after each call, so
// that no key is idle, and none evicted, while the benchmark cycles through
// a million of them: a million requests per 10^7 s (0.1 a second), a
// million tokens a second.
func liveLimits() ratelimit.Limits {
	return ratelimit.Limits{Requests: 1_000_000, Tokens: 10_000_000_000_000, Period: 10_000_000 * time.Second}
}

// BenchmarkTenants measures admission when the calls come from n distinct
// clients, each in turn in a shuffled order, after every client has called
// twice (the second pass finds each key in its shard's snapshot): through
// a per-client limiter alone (the preset's client layer), and through the
// preset. As in a service, each call's request and client key are new (the
// key built for the call, as a decoder would), so what a million keys cost
// is the layers' own memory: finding one key among n. The goal is a flat
// cost, within 1.5x from a thousand keys to a million. heap-MiB is what
// the n live keys hold (the heap after a GC, less the heap before the
// layer was built).
//
// latency/MiB=m is the floor that goal meets: one load whose address
// depends on the load before, at random 64-byte lines of m MiB, the cost
// of a cache miss (and of its TLB miss) when the state read is m MiB. A
// million keys hold about 340 MiB, so an admission at a random one reads
// at least one line from DRAM, whose latency latency/MiB=256 gives.
func BenchmarkTenants(b *testing.B) {
	for _, through := range []string{"limiter", "preset"} {
		for _, n := range []int{1_000, 100_000, 1_000_000} {
			b.Run(through+"/keys="+strconv.Itoa(n), func(b *testing.B) { benchTenants(b, through, n) })
		}
	}
	for _, mib := range []int{1, 16, 256} {
		b.Run("latency/MiB="+strconv.Itoa(mib), func(b *testing.B) { benchLatency(b, mib) })
	}
}

// benchLatency chases pointers through a random cycle over the 64-byte
// lines of mib MiB: each op is one dependent load.
func benchLatency(b *testing.B, mib int) {
	const line = 8 // uint64s in a cache line
	n := mib << 20 / (8 * line)
	next := make([]uint64, n*line)
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for i, p := range perm {
		next[p*line] = uint64(perm[(i+1)%n] * line)
	}
	p := uint64(0)
	for b.Loop() {
		p = next[p]
	}
	runtime.KeepAlive(p)
}

func benchTenants(b *testing.B, through string, n int) {
	base := liveHeap()
	var m portico.Model
	var l *ratelimit.Limiter
	if through == "limiter" {
		var err error
		if l, err = ratelimit.New(ratelimit.Config{Limits: liveLimits(), Key: ratelimit.ByClient}); err != nil {
			b.Fatal(err)
		}
		m = l.Wrap(answer)
	} else {
		s, err := stack.New(stack.Config{Routes: []stack.Route{
			{Route: portico.Route{Name: "primary", Model: answer}},
			{Route: portico.Route{Name: "secondary", Model: answer}},
		}, Client: &ratelimit.Config{Limits: liveLimits()}, Tracer: noopTracer(b)})
		if err != nil {
			b.Fatal(err)
		}
		m, l = s, s.ClientLimiter()
	}
	ctx := context.Background()
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	req := &portico.Request{Messages: tableReq.Messages, MaxOutputTokens: 100}
	buf := []byte("tenant-")
	call := func(i int) {
		buf = strconv.AppendInt(buf[:len("tenant-")], int64(order[i]), 10)
		req.Identity.ClientKey = string(buf)
		if _, err := m.Generate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 2 * n {
		call(i % n)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	i := 0
	t0 := threadCPU()
	for b.Loop() {
		call(i)
		if i++; i == n {
			i = 0
		}
	}
	b.ReportMetric(float64(threadCPU()-t0)/float64(b.N), "cpu-ns/op")
	b.StopTimer()
	b.ReportMetric(float64(liveHeap()-base)/(1<<20), "heap-MiB")
	runtime.KeepAlive(m)
	if k := l.Keys(); k != n {
		b.Fatalf("the client limiter holds %d keys, want the %d clients", k, n)
	}
}

// liveHeap returns the heap in use after a GC, in bytes.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
