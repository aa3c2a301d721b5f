package ratelimit

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"golang.org/x/time/rate"
)

// benchLimiter has both buckets far from empty, so every call is admitted.
func benchLimiter(b testing.TB) *Limiter {
	return mustNew(b, Config{Limits: Limits{Requests: 1e9, Tokens: 1e12, Period: time.Second, MaxInFlight: 1 << 20}, DefaultMaxTokens: 100})
}

var benchReq = &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hello, world")}, MaxOutputTokens: 50, Identity: portico.Identity{ClientKey: "c"}}

// BenchmarkAdmit is the happy path: an existing key, both buckets with room,
// the refund at completion, around a model that answers at once. Compare
// with BenchmarkRateAllow, a bare rate.Limiter.Allow, in the same run.
func BenchmarkAdmit(b *testing.B) {
	l := benchLimiter(b)
	resp := &portico.Response{Usage: portico.Usage{InputTokens: 7, OutputTokens: 10}}
	m := l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil }))
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Generate(ctx, benchReq); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel-own-key", func(b *testing.B) {
		var id atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req := benchReq.Clone()
			req.Identity.ClientKey = "c" + strconv.FormatInt(id.Add(1), 10)
			for pb.Next() {
				if _, err := m.Generate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("parallel-same-key", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := m.Generate(ctx, benchReq); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkRateAllow is the reference: a bare rate.Limiter.Allow.
func BenchmarkRateAllow(b *testing.B) {
	lim := rate.NewLimiter(1e9, 1e9)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !lim.Allow() {
				b.Fatal("refused")
			}
		}
	})
	b.Run("parallel-own-limiter", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			lim := rate.NewLimiter(1e9, 1e9)
			for pb.Next() {
				if !lim.Allow() {
					b.Fatal("refused")
				}
			}
		})
	})
	b.Run("parallel-same-limiter", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !lim.Allow() {
					b.Fatal("refused")
				}
			}
		})
	})
}
