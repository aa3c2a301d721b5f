package retry

import (
	"context"
	"testing"

	"github.com/portico-llm/portico"
)

// The happy-path cost of the retry layer, next to the floor of composition:
// the bare call, a Chain of 6 pass-through middlewares, and the Retrier on a
// first-try success (default Config, budget on, one client key).
//
//	go test -run '^$' -bench . -benchtime=200ms ./retry/

var sink *portico.Response

func okModel() portico.Model {
	return portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return okResp, nil })
}

func passThrough(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return next.Generate(ctx, req)
	})
}

func benchModel(b *testing.B, m portico.Model) {
	ctx := context.Background()
	req := userReq.Clone()
	req.Identity.ClientKey = "alice"
	b.ReportAllocs()
	for b.Loop() {
		sink, _ = m.Generate(ctx, req)
	}
}

func BenchmarkBare(b *testing.B) { benchModel(b, okModel()) }

func BenchmarkChain6(b *testing.B) {
	mw := portico.Middleware(passThrough)
	benchModel(b, portico.Chain(okModel(), mw, mw, mw, mw, mw, mw))
}

func BenchmarkRetryFirstTry(b *testing.B) { benchModel(b, MustNew(Config{}).Wrap(okModel())) }

func BenchmarkRetryFirstTryNoBudget(b *testing.B) {
	benchModel(b, MustNew(Config{Budget: Budget{Off: true}}).Wrap(okModel()))
}

// Many client keys: every call misses the hot bucket and looks up the map.
func BenchmarkRetryFirstTryManyKeys(b *testing.B) {
	m := MustNew(Config{}).Wrap(okModel())
	ctx := context.Background()
	reqs := make([]*portico.Request, 64)
	for i := range reqs {
		reqs[i] = userReq.Clone()
		reqs[i].Identity.ClientKey = "client-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sink, _ = m.Generate(ctx, reqs[i&63])
		i++
	}
}

func BenchmarkRetryFirstTryParallel(b *testing.B) {
	m := MustNew(Config{}).Wrap(okModel())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		req := userReq.Clone()
		for pb.Next() {
			m.Generate(ctx, req)
		}
	})
}
