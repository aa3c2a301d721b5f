package bench

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/sony/gobreaker/v2"
)

var (
	okResp = &portico.Response{Text: "ok", FinishReason: portico.FinishStop}
	bare   = portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return okResp, nil
	})
	req = &portico.Request{}
)

// BenchmarkBreakerClosed compares the happy path (breaker closed, the call
// succeeds) of the bare Model, Portico's breaker (count-based and time-based
// windows) and sony/gobreaker/v2's Execute around the same Model.
func BenchmarkBreakerClosed(b *testing.B) {
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bare.Generate(ctx, req)
		}
	})
	b.Run("portico/count", func(b *testing.B) {
		m := breaker.MustNew(breaker.Config{}).Wrap(bare)
		b.ReportAllocs()
		for b.Loop() {
			m.Generate(ctx, req)
		}
	})
	b.Run("portico/time", func(b *testing.B) {
		m := breaker.MustNew(breaker.Config{Window: breaker.Window{Duration: 60e9}}).Wrap(bare)
		b.ReportAllocs()
		for b.Loop() {
			m.Generate(ctx, req)
		}
	})
	b.Run("gobreaker", func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[*portico.Response](gobreaker.Settings{Name: "bench"})
		b.ReportAllocs()
		for b.Loop() {
			cb.Execute(func() (*portico.Response, error) { return bare.Generate(ctx, req) })
		}
	})
	b.Run("portico/count/parallel", func(b *testing.B) {
		m := breaker.MustNew(breaker.Config{}).Wrap(bare)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Generate(ctx, req)
			}
		})
	})
	b.Run("gobreaker/parallel", func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[*portico.Response](gobreaker.Settings{Name: "bench"})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				cb.Execute(func() (*portico.Response, error) { return bare.Generate(ctx, req) })
			}
		})
	})
}
