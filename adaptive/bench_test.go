package adaptive_test

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/ratelimit"
)

// The cost of an adaptive limit: a ratelimit.Limiter with a fixed in-flight
// cap, and the same Limiter driven by each algorithm, around a model that
// answers at once (the difference is the limit's Limit, the clock read at
// completion, which AIMD without a Timeout does not need, and Done), and
// Done alone.
//
//	go test -run '^$' -bench . -benchtime=200ms -count=5 ./adaptive/

var sink *portico.Response

func benchLimiter(b *testing.B, cfg ratelimit.Config) {
	resp := &portico.Response{Text: "ok"}
	m := limiter(b, cfg).Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil }))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sink, _ = m.Generate(ctx, req)
	}
}

func BenchmarkFixedCap(b *testing.B) {
	benchLimiter(b, ratelimit.Config{Limits: ratelimit.Limits{MaxInFlight: 200}})
}

func BenchmarkAdaptive(b *testing.B) {
	for _, c := range []struct {
		name string
		alg  adaptive.Algorithm
	}{
		{"AIMD", adaptive.AIMD{}}, {"AIMD with a Timeout", adaptive.AIMD{Timeout: time.Second}},
		{"Vegas", adaptive.Vegas{}}, {"Gradient2", adaptive.Gradient2{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			benchLimiter(b, ratelimit.Config{Concurrency: adaptive.MustNew(adaptive.Config{Algorithm: c.alg})})
		})
	}
}

func BenchmarkDone(b *testing.B) {
	l := adaptive.MustNew(adaptive.Config{})
	b.ReportAllocs()
	for b.Loop() {
		l.Done(100_000_000, 20, portico.OK)
	}
}
