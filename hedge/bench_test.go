package hedge_test

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

// The cost of the hedging layer around a model that answers at once: a
// request it may not hedge (NoAmbiguousRetry), one it may while it learns the
// latency (timed inline, for its first 50 calls only: see TestAllocs), and
// one it races with no hedge sent (the attempt on a goroutine of its own
// under a cancelable context, its hedge on a timer), the same when
// the model looks at ctx.Done(), next to the bare call:
//
//	go test -run '^$' -bench . -benchtime=200ms -count=5 ./hedge/

var sink *portico.Response

var okResp = &portico.Response{Text: "ok"}

func okModel() portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return okResp, nil })
}

func benchModel(b *testing.B, m portico.Model, r *portico.Request) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sink, _ = m.Generate(ctx, r)
	}
}

var noRepeat = &portico.Request{Model: "m", Messages: req.Messages, NoAmbiguousRetry: true}

func BenchmarkBare(b *testing.B) { benchModel(b, okModel(), req) }

func BenchmarkNotHedged(b *testing.B) {
	benchModel(b, hedge.MustNew(hedge.Config{Delay: time.Second}).Wrap(okModel()), noRepeat)
}

func BenchmarkRaced(b *testing.B) {
	benchModel(b, hedge.MustNew(hedge.Config{Delay: time.Second}).Wrap(okModel()), req)
}

// A raced request whose model looks at ctx.Done(), as any client that
// sends over the network does: the attempt's context is then derived.
func BenchmarkRacedDone(b *testing.B) {
	looks := portico.ModelFunc(func(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
			return okResp, nil
		}
	})
	benchModel(b, hedge.MustNew(hedge.Config{Delay: time.Second}).Wrap(looks), req)
}

// A request the layer may not hedge, one it times while it learns, and one
// whose hedge would be due after its deadline cost no allocation; one it
// races costs 12 while no hedge is sent: the race's state, the attempt,
// its goroutine and its cancelable context, the hedge's timer and the
// channel of the attempts' ends, and the Plan.
func TestAllocs(t *testing.T) {
	m := hedge.MustNew(hedge.Config{Delay: time.Second}).Wrap(okModel())
	if n := testing.AllocsPerRun(1000, func() { m.Generate(context.Background(), noRepeat) }); n != 0 {
		t.Errorf("not hedged: %v allocations, want 0", n)
	}
	learning := hedge.MustNew(hedge.Config{}).Wrap(okModel())
	if n := testing.AllocsPerRun(40, func() { learning.Generate(context.Background(), req) }); n != 0 {
		t.Errorf("learning: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { m.Generate(context.Background(), req) }); n != 12 {
		t.Errorf("raced, no hedge sent: %v allocations, want 12", n)
	}
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if n := testing.AllocsPerRun(1000, func() { m.Generate(short, req) }); n != 0 {
		t.Errorf("hedge due after the deadline: %v allocations, want 0", n)
	}
}
