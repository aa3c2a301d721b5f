package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// BenchmarkRedis is the table of README.md's Redis section: what one
// request costs a shared Redis, the preset with every store shared beside
// PING (the floor) and redis_rate v10's Allow (one GCRA script), on a
// private redis-server on loopback (redistest; the benchmark is skipped,
// with a message, where no redis-server is installed). Each row reports,
// per request:
//
//   - rt/op: round trips, all of them (go-redis hook: a command or a
//     pipeline is one), and path-rt/op those on the caller's path (the
//     rest are sent after the call, by the store's own goroutine);
//   - cmds/op: commands the server ran, scripts' own included (INFO
//     commandstats, less the INFO calls);
//   - redis-us/op: the server's CPU time (INFO's used_cpu_sys and
//     used_cpu_user), and core-req/s, the requests per second one core of
//     it would serve at that cost (1e6 / redis-us/op);
//   - allocs/op (the client's), and p50-us, the median time of one
//     request, sequential, on loopback.
//
// preset-parallel is the preset under 16 callers at once (RunParallel),
// where the settles of many requests share one script: the cost per
// request of a loaded service; it has no p50.
//
// The saturation of a core is derived from the CPU per request rather
// than driven: on a small shared machine the clients would saturate
// before the server does. The rows run one after the other, each against
// its own server, so that their CPU counts only their own work.
//
//	go -C bench test -run '^$' -bench '^BenchmarkRedis$' -benchtime 20000x -count 3 .
func BenchmarkRedis(b *testing.B) {
	rows := []struct {
		name string
		op   func(b *testing.B, c *redis.Client) (func(ctx context.Context) error, func())
	}{
		{"ping", func(_ *testing.B, c *redis.Client) (func(context.Context) error, func()) {
			return func(ctx context.Context) error { return c.Ping(ctx).Err() }, nil
		}},
		{"redis_rate", func(_ *testing.B, c *redis.Client) (func(context.Context) error, func()) {
			l := redis_rate.NewLimiter(c)
			limit := redis_rate.PerSecond(1 << 30)
			return func(ctx context.Context) error {
				res, err := l.Allow(ctx, "tenant", limit)
				if err == nil && res.Allowed != 1 {
					err = fmt.Errorf("redis_rate refused: %+v", res)
				}
				return err
			}, nil
		}},
		{"preset", func(b *testing.B, c *redis.Client) (func(context.Context) error, func()) {
			return redisPreset(b, c, ratelimit.Strict)
		}},
		{"preset-parallel", func(b *testing.B, c *redis.Client) (func(context.Context) error, func()) {
			return redisPreset(b, c, ratelimit.Strict)
		}},
		{"preset-leased", func(b *testing.B, c *redis.Client) (func(context.Context) error, func()) {
			return redisPreset(b, c, ratelimit.Leased)
		}},
	}
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			srv := redistest.Start(b)
			c := redistest.NewClient(srv.Addr)
			defer c.Close()
			h := &roundTrips{}
			c.AddHook(h)
			op, done := row.op(b, c)
			ctx := context.WithValue(context.Background(), onPath{}, true)
			for range 100 { // warm up: scripts loaded, connections dialed
				if err := op(ctx); err != nil {
					b.Fatal(err)
				}
			}
			admin := redistest.NewClient(srv.Addr)
			defer admin.Close()
			before := serverStats(b, admin)
			h.all.Store(0)
			h.path.Store(0)
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			b.ResetTimer()
			if strings.HasSuffix(row.name, "-parallel") {
				// 16 callers at once: the settles of many requests share
				// a script, as under load.
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := op(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					start := time.Now()
					if err := op(ctx); err != nil {
						b.Fatal(err)
					}
					if len(lat) < cap(lat) {
						lat = append(lat, time.Since(start))
					}
				}
			}
			b.StopTimer()
			if done != nil {
				done() // the settles queued are part of the cost
			}
			after := serverStats(b, admin)
			if os.Getenv("BENCH_REDIS_DEBUG") != "" {
				info, _ := admin.Info(context.Background(), "commandstats").Result()
				b.Log(info)
			}
			n := float64(b.N)
			cpu := (after.cpu - before.cpu) / n
			b.ReportMetric(float64(h.all.Load())/n, "rt/op")
			b.ReportMetric(float64(h.path.Load())/n, "path-rt/op")
			b.ReportMetric((after.calls-before.calls-1)/n, "cmds/op") // less the INFO that read before
			b.ReportMetric(cpu, "redis-us/op")
			b.ReportMetric(1e6/cpu, "core-req/s")
			if len(lat) > 0 {
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
			}
		})
	}
}

// The preset's request over Redis: limits that never refuse, a model that
// answers at once using 400 of the 1,000 tokens reserved for its output
// (each call settles a refund).
var (
	redisModel = portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 100, OutputTokens: 300}}, nil
	})
	redisReq = &portico.Request{Model: "m", MaxOutputTokens: 1000, Identity: portico.Identity{ClientKey: "tenant"},
		Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}}
	redisLimits = ratelimit.Limits{Requests: 1 << 30, Tokens: 1 << 40, Period: time.Minute}
)

// onPath marks the context of the benchmark's own calls: a round trip
// made with it is on the caller's path.
type onPath struct{}

// roundTrips counts a client's round trips: each command processed alone
// and each pipeline.
type roundTrips struct{ all, path atomic.Int64 }

func (h *roundTrips) count(ctx context.Context) {
	h.all.Add(1)
	if ctx.Value(onPath{}) != nil {
		h.path.Add(1)
	}
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(ctx)
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(ctx)
		return next(ctx, cmds)
	}
}

// stats are a server's counters: commands run (INFO commandstats, the
// scripts' own included) and CPU time in microseconds.
type stats struct{ calls, cpu float64 }

var statsMu sync.Mutex

// serverStats reads c's server's counters with one INFO.
func serverStats(b *testing.B, c *redis.Client) stats {
	statsMu.Lock()
	defer statsMu.Unlock()
	info, err := c.Info(context.Background(), "commandstats", "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var s stats
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "cmdstat_"):
			_, rest, _ := strings.Cut(line, ":calls=")
			calls, _, _ := strings.Cut(rest, ",")
			v, _ := strconv.ParseFloat(calls, 64)
			s.calls += v
		case strings.HasPrefix(line, "used_cpu_sys:"), strings.HasPrefix(line, "used_cpu_user:"):
			_, v, _ := strings.Cut(line, ":")
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f * 1e6
		}
	}
	if math.IsNaN(s.cpu) {
		b.Fatal("no CPU in INFO")
	}
	return s
}

// redisPreset returns one request through the preset with every store on c,
// its limiters in mode sharing, and what sends the settles queued.
func redisPreset(b *testing.B, c *redis.Client, sharing ratelimit.Sharing) (func(context.Context) error, func()) {
	s, err := redisstore.New(redisstore.Config{Client: c, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	st, err := stack.New(stack.Config{
		Client: &ratelimit.Config{Limits: redisLimits, Shared: ratelimit.Shared{Store: s.Buckets()}, Sharing: sharing},
		Routes: []stack.Route{{
			Route:   portico.Route{Name: "r", Model: redisModel},
			Limiter: &ratelimit.Config{Limits: redisLimits, Shared: ratelimit.Shared{Store: s.Buckets()}, Sharing: sharing},
			Retry:   retry.Config{Budget: retry.Budget{Shared: retry.Shared{Store: s.Budgets()}}},
		}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context) error {
			_, err := st.Generate(ctx, redisReq)
			return err
		}, func() {
			if c, ok := any(s).(interface{ Close() error }); ok { // sends what is queued
				c.Close()
			}
		}
}
