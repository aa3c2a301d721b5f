package bench

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// liveLimits never refuse a benchmark's calls and keep every key that
// called busy (its request bucket below full) for 10 s after each call, so
// that no key is idle, and none evicted, while the benchmark cycles through
// a million of them: a million requests per 10^7 s (0.1 a second), a
// million tokens a second.
func liveLimits() ratelimit.Limits {
	return ratelimit.Limits{Requests: 1_000_000, Tokens: 10_000_000_000_000, Period: 10_000_000 * time.Second}
}

// BenchmarkTenants measures admission through a per-client limiter (the
// preset's client layer) when the calls come from n distinct clients, each
// in turn in a shuffled order, after every client has called once. As in a
// service, each call's request and client key are new (the key built for
// the call, as a decoder would), so what a million keys cost is the
// limiter's own memory: finding one key among n. The goal is a flat cost:
// within 1.5x from a thousand keys to a million.
func BenchmarkTenants(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			l, err := ratelimit.New(ratelimit.Config{Limits: liveLimits(), Key: ratelimit.ByClient})
			if err != nil {
				b.Fatal(err)
			}
			m := l.Wrap(answer)
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
			for i := range 2 * n { // the second pass finds every key in the snapshots
				call(i % n)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				call(i)
				if i++; i == n {
					i = 0
				}
			}
			if k := l.Keys(); k != n {
				b.Fatalf("limiter holds %d keys, want the %d clients", k, n)
			}
		})
	}
}
