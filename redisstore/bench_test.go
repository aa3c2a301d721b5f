package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// benchLimits never refuse: every reservation goes through.
var benchLimits = ratelimit.Limits{Requests: 1 << 30, Tokens: 1 << 40, Period: time.Minute}

// BenchmarkBuckets measures the bucket scripts on loopback, one key, one
// goroutine: one reservation (a round trip), a reservation and its refund
// (two), and the same pair sent 64 at a time in one pipeline (ns per
// pair); and beside them a whole call through a Limiter over the Store and
// through the in-memory Limiter, in the same run.
func BenchmarkBuckets(b *testing.B) {
	srv := redistest.Start(b)
	s := newStore(b, srv, Config{Timeout: time.Second})
	bk := s.Buckets()
	ctx := context.Background()
	lim := &benchLimits
	b.Run("reserve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := bk.Take(ctx, "k", lim, 1000); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reserve+refund", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := bk.Take(ctx, "k", lim, 1000); err != nil {
				b.Fatal(err)
			}
			if err := bk.Settle(ctx, "k", lim, 600, nil, time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reserve+refund/pipelined64", func(b *testing.B) {
		const batch = 64
		for _, sc := range []*redis.Script{takeScript, settleScript} {
			if err := sc.Load(ctx, s.c).Err(); err != nil {
				b.Fatal(err)
			}
		}
		key := s.key("rl", "k")
		take := string(packNums(nil, append(bucketNums(nil, lim), 1000)...))
		settle := string(packNums(nil, append(appendQuota(appendQuota(append(bucketNums(nil, lim), 600, float64(lim.Tokens), float64(micros(time.Minute))), nil, true), nil, false), 0)...))
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if n%batch == 0 {
				n = 0
			}
			n++
			if n < batch {
				continue
			}
			_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for range batch {
					takeScript.EvalSha(ctx, p, []string{key, s.opKey("k")}, take, s.opTTL)
					settleScript.EvalSha(ctx, p, []string{key, s.opKey("k")}, settle, s.opTTL)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Usage: portico.Usage{InputTokens: 100, OutputTokens: 300}}, nil
	})
	req := &portico.Request{Model: "m", MaxOutputTokens: 1000, Identity: portico.Identity{ClientKey: "c"}}
	for _, shared := range []bool{true, false} {
		name := "limiter/memory"
		cfg := ratelimit.Config{Limits: benchLimits}
		if shared {
			name, cfg.Shared.Store = "limiter/redis", bk
		}
		l, err := ratelimit.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		m := l.Wrap(ok)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Generate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCooldowns measures a fallback group's first-route success over
// the in-memory cooldowns and over a Cooldowns shared through Redis, in
// the same run: the shared store's Until reads its local copy, so a
// request makes no round trip for it.
func BenchmarkCooldowns(b *testing.B) {
	srv := redistest.Start(b)
	cool := newStore(b, srv, Config{}).Cooldowns()
	defer cool.Close()
	ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok"}, nil
	})
	routes := []portico.Route{{Name: "a", Model: ok}, {Name: "b", Model: ok}}
	ctx, req := context.Background(), &portico.Request{Model: "m"}
	for _, c := range []struct {
		name string
		cool portico.Cooldowns
	}{{"group/memory", nil}, {"group/redis", cool}} {
		g, err := fallback.New(fallback.Config{Routes: routes, Cooldowns: c.cool})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Generate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
