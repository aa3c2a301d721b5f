package redisstore

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/spend"
	"github.com/portico-llm/portico/stack"
)

// observed is an InputObserver estimating every request at 10 tokens
// that reports each sample to itself.
type observed func(estimate, inputTokens int)

func (observed) EstimateInputTokens(*portico.Request) int { return 10 }

func (f observed) ObserveInputTokens(_ *portico.Request, estimate, inputTokens int) {
	f(estimate, inputTokens)
}

// TestLimiterObservesOnceOverRedis: a Limiter whose buckets are in Redis
// gives its InputObserver one sample per answered call, the estimate it
// reserved (10) and the answer's input tokens (20): asking Redis on each
// call (strict), on a lease (Sharing Auto, large limits), and on the
// local share while the server is stopped (failing open). Each Limiter
// has an in-flight cap, whose slots are a Limiter of their own.
func TestLimiterObservesOnceOverRedis(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lim    ratelimit.Limits
		script *redis.Script // the script the calls ran; nil: the server is stopped
	}{
		{"strict", ratelimit.Limits{Tokens: 6000, Requests: 40}, takeScript},
		{"leased", ratelimit.Limits{Tokens: 2_048_000, Requests: 5000}, leaseScript},
		{"fail open", ratelimit.Limits{Tokens: 6000, Requests: 40}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			h := &scripts{}
			c := srv.Client(t)
			c.AddHook(h)
			st := newStore(t, srv, Config{Client: c})
			var mu sync.Mutex
			var samples [][2]int
			est := observed(func(estimate, inputTokens int) {
				mu.Lock()
				samples = append(samples, [2]int{estimate, inputTokens})
				mu.Unlock()
			})
			lim := tc.lim
			lim.MaxInFlight = 4
			l, err := ratelimit.New(ratelimit.Config{Limits: lim, Estimator: est,
				Shared: ratelimit.Shared{Store: st.Buckets(), FailOpen: true, Instances: 4}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.script == nil {
				srv.Stop()
			}
			obs := &events{}
			ctx := portico.ContextWithObserver(context.Background(), obs)
			m := l.Wrap(modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop,
				Usage: portico.Usage{InputTokens: 20, OutputTokens: 5}}}))
			req := &portico.Request{Model: "m", MaxOutputTokens: 10, Identity: portico.Identity{ClientKey: "c"}}
			for i := range 3 {
				if _, err := m.Generate(ctx, req); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			mu.Lock()
			if want := [][2]int{{10, 20}, {10, 20}, {10, 20}}; !slices.Equal(samples, want) {
				t.Errorf("samples %v, want %v", samples, want)
			}
			mu.Unlock()
			switch n := obs.count(portico.EventSharedStore, "ratelimit:fail_open"); {
			case tc.script == nil && n != 3:
				t.Errorf("%d calls failed open, want 3", n)
			case tc.script != nil && (n != 0 || len(h.runs(tc.script)) == 0):
				t.Errorf("%d calls failed open, %d ran the %s script; want none and some", n, len(h.runs(tc.script)), tc.name)
			}
		})
	}
}

// TestStackCalibratesOverRedis: a stack whose route limiter keeps its
// buckets in Redis (Route.Limiter.Shared) teaches the stack's estimator
// from the answers: the route's estimate of a prompt, 104 tokens by the
// byte rule (0.104 dollars by the spend budget), is 208 (0.208) once 16
// answers reported 208 input tokens.
func TestStackCalibratesOverRedis(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv, Config{})
	route := stack.Route{
		Route: portico.Route{Name: "r", Model: modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop,
			Usage: portico.Usage{InputTokens: 208, OutputTokens: 1}}}),
			Capabilities: portico.Capabilities{InputPrice: 0.001}},
		Limiter: &ratelimit.Config{Limits: ratelimit.Limits{Tokens: 1_000_000, MaxInFlight: 8}, Shared: ratelimit.Shared{Store: st.Buckets()}},
	}
	s, err := stack.New(stack.Config{Routes: []stack.Route{route}, Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 1000}}}})
	if err != nil {
		t.Fatal(err)
	}
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, strings.Repeat("x", 400))}, MaxOutputTokens: 1}
	var estimates []float64 // in thousandths of a dollar: the tokens
	for range 17 {
		estimates = append(estimates, math.Round(s.Spend().Estimate(req)*1000))
		if _, err := s.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if want := append(slices.Repeat([]float64{104}, 16), 208); !slices.Equal(estimates, want) {
		t.Errorf("estimates before each answer %v, want %v", estimates, want)
	}
}
