package fallback

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

var sink *portico.Response

// The cost of a group's hedging when no hedge is sent, over two routes
// that answer at once, under a deadline: a request the group may not race
// (NoAmbiguousRetry) walks the routes, one it may races them with no
// hedge due before the answer (see TestHedgeRacedAllocs):
//
//	go test -run '^$' -bench Group -benchtime=200ms -count=5 ./fallback/
func BenchmarkGroup(b *testing.B) {
	ok := &portico.Response{Text: "ok"}
	m := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return ok, nil })
	g := MustNew(Config{Routes: []portico.Route{{Name: "a", Model: m}, {Name: "b", Model: m}}, Hedge: hedge.MustNew(hedge.Config{Delay: time.Second})})
	deadline := &portico.Contract{Deadline: time.Minute}
	for _, c := range []struct {
		name string
		req  *portico.Request
	}{
		{"walked", &portico.Request{Messages: simple.Messages, Contract: deadline, NoAmbiguousRetry: true}},
		{"raced", &portico.Request{Messages: simple.Messages, Contract: deadline}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				sink, _ = g.Generate(ctx, c.req)
			}
		})
	}
}
