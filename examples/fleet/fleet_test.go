// Package main_test runs what a service of three instances would with
// Portico: the preset stack over the OpenAI and Anthropic adapters against
// their fake servers on loopback, every instance with its own Redis client
// over one real redis-server (package redisstore), sharing the client and
// route limits, the retry budgets, the cooldowns and the breakers' open
// state, and breaks the providers and Redis in turn.
package main_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	gpt     = "gpt-4o-mini"
	claude  = "claude-haiku-4-5"
	canary  = "canary-91c2"
	apiKey  = "sk-secret-5d0a"
	fleetN  = 3
	refresh = 20 * time.Millisecond
)

// logs keeps every record with its attributes, to look for secrets.
type logs struct {
	mu  sync.Mutex
	out []string
}

func (h *logs) Enabled(context.Context, slog.Level) bool { return true }
func (h *logs) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	h.mu.Lock()
	h.out = append(h.out, b.String())
	h.mu.Unlock()
	return nil
}
func (h *logs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logs) WithGroup(string) slog.Handler      { return h }

func (h *logs) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.out, "\n")
}

// fleet is three instances of one service over shared fakes and one Redis.
type fleet struct {
	redis  *redistest.Server
	oai    *fakeopenai.Server
	ant    *fakeanthropic.Server
	stores [fleetN]*redisstore.Store
	st     [fleetN]*stack.Stack
	logs   *logs
	sent   commands // every Redis command of every instance
	// calls counts the calls the groups placed on OpenAI, before its
	// limiter, breaker and retries (Route.Middleware).
	calls atomic.Int64
}

// setup is what a test changes; zero fields mean none, or the defaults.
type setup struct {
	client, openai int                // shared limits, requests per minute
	script         []fakeopenai.Fault // OpenAI's faults, in order
	onOpenAI       func()             // called at each OpenAI request's arrival
	store          redisstore.Config  // Client, Refresh and Logger are set
	streams        retry.Timeouts     // retry's stream timeouts; zero: relaxed (see newFleet)
	hedge          time.Duration      // the hedge's Delay; zero: relaxed, a second
	deadline       time.Duration      // the stack's Deadline; zero: relaxed, 10 s
}

func newFleet(t *testing.T, set setup) *fleet {
	t.Helper()
	f := &fleet{redis: redistest.Start(t), logs: &logs{}}
	var err error
	om := fakeopenai.ModelConfig{Name: gpt, Latency: 2 * time.Millisecond, TokensPerSecond: 2000, Script: set.script}
	ocfg := fakeopenai.Config{Seed: 1, Models: []fakeopenai.ModelConfig{om}}
	if set.onOpenAI != nil {
		ocfg.OnRequest = func(fakeopenai.Request) { set.onOpenAI() }
	}
	if f.oai, err = fakeopenai.Start(ocfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.oai.Close)
	am := fakeanthropic.ModelConfig{Name: claude, Latency: 2 * time.Millisecond, TokensPerSecond: 2000}
	if f.ant, err = fakeanthropic.Start(fakeanthropic.Config{Seed: 2, Models: []fakeanthropic.ModelConfig{am}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.ant.Close)
	log := slog.New(f.logs)
	for i := range fleetN {
		cfg := set.store
		c := f.redis.Client(t)
		c.AddHook(&f.sent)
		cfg.Client = c
		cfg.Refresh = refresh
		cfg.Logger = log
		if cfg.Probe == 0 {
			cfg.Probe = 100 * time.Millisecond
		}
		s, err := redisstore.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		f.stores[i] = s
		cool := s.Cooldowns()
		t.Cleanup(func() { cool.Close() })
		shared := ratelimit.Shared{Store: s.Buckets(), FailOpen: true, Instances: fleetN}
		// A stream stopped past these is a stall to the retry layer, a
		// call slower than the hedge's Delay gets a second attempt, one
		// past the Deadline fails: a test about stalls sets them tight;
		// the others leave a starved CPU (2 cores, -race, every module's
		// tests at once) room, where healthy loopback calls were seen to
		// stop for 100 ms and to take over 2 s.
		streams, hedgeDelay, deadline := set.streams, set.hedge, set.deadline
		if streams == (retry.Timeouts{}) {
			streams = retry.Timeouts{FirstChunk: time.Second, ChunkGap: time.Second}
		}
		if hedgeDelay == 0 {
			hedgeDelay = time.Second
		}
		if deadline == 0 {
			deadline = 10 * time.Second
		}
		route := func(name, provider string, m portico.Model) stack.Route {
			return stack.Route{
				Route:   portico.Route{Name: name, Model: m, Capabilities: portico.Capabilities{Provider: provider, ContextWindow: 128_000, MaxOutput: 4096}},
				Breaker: breaker.Config{OpenFor: 300 * time.Millisecond, Shared: cool, Logger: log},
				Retry: retry.Config{
					Budget:   retry.Budget{Burst: 2, DestinationBurst: 6, Shared: retry.Shared{Store: s.Budgets(), FailOpen: true, Instances: fleetN}},
					Timeouts: streams,
					Logger:   log,
				},
			}
		}
		oa := openai.New(openai.Config{Model: gpt}, openaisdk.WithBaseURL(f.oai.BaseURL()), openaisdk.WithAPIKey(apiKey), openaisdk.WithHTTPClient(f.oai.Client()))
		an := anthropic.New(anthropic.Config{Model: claude}, anthropicsdk.WithBaseURL(f.ant.BaseURL()), anthropicsdk.WithAPIKey(apiKey), anthropicsdk.WithHTTPClient(f.ant.Client()))
		ro, ra := route("openai", "openai", oa), route("anthropic", "anthropic", an)
		ro.Middleware = []portico.Middleware{func(next portico.Model) portico.Model {
			return portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
				f.calls.Add(1)
				return next.Generate(ctx, r)
			})
		}}
		if set.openai > 0 {
			ro.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: set.openai}, Shared: shared}
		}
		cfg2 := stack.Config{
			Routes:   []stack.Route{ro, ra},
			Deadline: deadline,
			Hedge:    &hedge.Config{Delay: hedgeDelay},
			Fallback: fallback.Config{Cooldowns: cool, WaitInPlace: 20 * time.Millisecond},
		}
		if set.client > 0 {
			cfg2.Client = &ratelimit.Config{Limits: ratelimit.Limits{Requests: set.client}, Shared: shared}
		}
		if f.st[i], err = stack.New(cfg2); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func tenant(n int) string { return fmt.Sprintf("tenant-%03d", n) }

func request(tenant string, stream bool) *portico.Request {
	r := &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, canary+": summarise the ticket")},
		MaxOutputTokens: 32,
		Identity:        portico.Identity{ClientKey: tenant},
	}
	if stream {
		r.OnChunk = func(portico.Chunk) error { return nil }
	}
	return r
}

type outcome struct {
	tenant string
	route  string
	err    error
	took   time.Duration
	at     time.Time // when it was sent
}

// fire sends reqs through the instances in turn, conc at a time.
func (f *fleet) fire(ctx context.Context, conc int, reqs []*portico.Request) []outcome {
	out := make([]outcome, len(reqs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				start := time.Now()
				resp, err := f.st[i%fleetN].Generate(ctx, reqs[i])
				o := outcome{tenant: reqs[i].Identity.ClientKey, err: err, took: time.Since(start)}
				if err == nil {
					o.route = resp.Route
				}
				out[i] = o
			}
		})
	}
	for i := range reqs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// noSecrets fails t when the canary or the key is in an error or a log.
func (f *fleet) noSecrets(t *testing.T, out []outcome) {
	t.Helper()
	for _, o := range out {
		if o.err != nil && (strings.Contains(o.err.Error(), canary) || strings.Contains(o.err.Error(), apiKey)) {
			t.Errorf("error string leaks the prompt or the key: %v", o.err)
		}
	}
	if l := f.logs.all(); strings.Contains(l, canary) || strings.Contains(l, apiKey) {
		t.Errorf("logs leak the prompt or the key:\n%s", l)
	}
}

// longTimeout is the store's config for tests not about timeouts: a
// healthy loopback server under -race on a loaded machine can take longer
// than the 50 ms default, which would turn it into an outage.
var longTimeout = redisstore.Config{Timeout: 2 * time.Second}
