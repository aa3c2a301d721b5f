package bench

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/sony/gobreaker/v2"
)

var chatReq = &portico.Request{
	Messages:        []portico.Message{portico.Text(portico.RoleUser, "What is the capital of France?")},
	MaxOutputTokens: 256,
}

// BenchmarkFallbackFirstRoute measures a group of two routes whose first
// answers: the group alone, the group over a breaker-guarded route (Health set,
// as recommended), and the same with a context deadline (the split then
// derives one context per attempt), next to the bare call and gobreaker's
// Execute.
func BenchmarkFallbackFirstRoute(b *testing.B) {
	ctx := context.Background()
	caps := portico.Capabilities{ContextWindow: 128000, MaxOutput: 16384, Tools: true}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bare.Generate(ctx, chatReq)
		}
	})
	b.Run("gobreaker", func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[*portico.Response](gobreaker.Settings{Name: "bench"})
		b.ReportAllocs()
		for b.Loop() {
			cb.Execute(func() (*portico.Response, error) { return bare.Generate(ctx, chatReq) })
		}
	})
	b.Run("group", func(b *testing.B) {
		g := fallback.MustNew(fallback.Config{Routes: []portico.Route{
			{Name: "a", Model: bare, Capabilities: caps},
			{Name: "b", Model: bare, Capabilities: caps},
		}})
		b.ReportAllocs()
		for b.Loop() {
			g.Generate(ctx, chatReq)
		}
	})
	b.Run("group+breaker", func(b *testing.B) {
		br := breaker.MustNew(breaker.Config{Name: "a"})
		g := fallback.MustNew(fallback.Config{Routes: []portico.Route{
			{Name: "a", Model: br.Wrap(bare), Health: br, Capabilities: caps},
			{Name: "b", Model: bare, Capabilities: caps},
		}})
		b.ReportAllocs()
		for b.Loop() {
			g.Generate(ctx, chatReq)
		}
	})
	b.Run("group+breaker/deadline", func(b *testing.B) {
		br := breaker.MustNew(breaker.Config{Name: "a"})
		g := fallback.MustNew(fallback.Config{Routes: []portico.Route{
			{Name: "a", Model: br.Wrap(bare), Health: br, Capabilities: caps},
			{Name: "b", Model: bare, Capabilities: caps},
		}})
		dctx, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		b.ReportAllocs()
		for b.Loop() {
			g.Generate(dctx, chatReq)
		}
	})
}
