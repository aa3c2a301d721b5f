package throttle_test

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/throttle"
)

// The happy-path cost of the throttle (a clean window: every call accepted)
// next to the bare call, and of a dirty window that lets every call through:
//
//	go test -run '^$' -bench . -benchtime=200ms -count=5 ./throttle/

var sink *portico.Response

func benchModel(b *testing.B, m portico.Model) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sink, _ = m.Generate(ctx, req)
	}
}

var okResp = &portico.Response{Text: "ok"}

func okModel() portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return okResp, nil })
}

func BenchmarkBare(b *testing.B) { benchModel(b, okModel()) }

func BenchmarkClean(b *testing.B) { benchModel(b, throttle.MustNew(throttle.Config{}).Wrap(okModel())) }

func BenchmarkCleanParallel(b *testing.B) {
	m := throttle.MustNew(throttle.Config{}).Wrap(okModel())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			m.Generate(ctx, req)
		}
	})
}

// A dirty window (one failure per 64 calls) that never rejects: every call
// reads the clock and sums the window.
func BenchmarkDirty(b *testing.B) {
	fail := &portico.Error{Class: portico.Transient}
	n := 0
	m := throttle.MustNew(throttle.Config{Rand: fixed(1)}).Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		n++
		if n%64 == 0 {
			return nil, fail
		}
		return okResp, nil
	}))
	benchModel(b, m)
}
