package stack

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

// The preset's group hedging (Config.Hedge) when the primary answers
// before the delay, next to the same request unhedged (NoAmbiguousRetry):
//
//	go test -run '^$' -bench Hedge -benchtime=200ms -count=5 ./stack/
func BenchmarkGroupHedge(b *testing.B) {
	s := presetWith(b, 0, &hedge.Config{Delay: time.Second})
	req := hello.Clone()
	req.Identity.ClientKey = "alice"
	once := req.Clone()
	once.NoAmbiguousRetry = true
	for _, c := range []struct {
		name string
		req  *portico.Request
	}{{"unhedged", once}, {"no hedge sent", req}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Generate(ctx, c.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
