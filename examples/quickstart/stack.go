package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/respcache"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/spend"
	"github.com/portico-llm/portico/stack"
	"github.com/portico-llm/portico/trace"
)

// newStack builds the preset stack over the three routes, in fallback
// order: an end-to-end deadline, a per-client rate limit (who gets in),
// then a fallback group; per route a breaker (stop calling a provider that
// is down), retry (the one layer that retries) and validate (HTTP 200 is
// not success) around the adapter. Two counting layers per route feed the
// summary: one sees each call the group places on the route, the other
// each attempt that reaches the adapter.
//
// With a watch (a chaos run), the stack is traced and its layers log at
// debug level, to the watch's recorder and handler.
func newStack(eps [dial.N]*endpoint, res *results, w *watch) (*stack.Stack, error) {
	var logger *slog.Logger
	var tracer *trace.Tracer
	if w != nil {
		logger, tracer = w.logger, w.tracer
	}
	var cache *respcache.Config
	if w == nil {
		cache = &respcache.Config{}
	}
	var routes []stack.Route
	for i, ep := range eps {
		rs := &res.routes[i]
		r := routeOf(i, ep, logger)
		r.Middleware = []portico.Middleware{rs.countCalls}
		r.ModelMiddleware = []portico.Middleware{rs.countAttempts}
		routes = append(routes, r)
	}
	return stack.New(stack.Config{
		Routes: routes,
		Client: &ratelimit.Config{
			Limits: ratelimit.Limits{
				Requests:    600, // per client per minute
				Tokens:      200_000,
				MaxInFlight: 32, // beyond it, shed at once
			},
			Mode:             ratelimit.Wait,
			MaxWait:          2 * time.Second,
			DefaultMaxTokens: 256,
		},
		Deadline: requestDeadline,
		// A rate-limited route whose Retry-After is longer than this is left
		// at once for the next route, and cools down until then.
		Fallback: fallback.Config{WaitInPlace: 50 * time.Millisecond, Logger: logger},
		Tracer:   tracer,
		// Each tenant may spend dailyBudget a day, priced by the routes'
		// Capabilities; a question a tenant asked before is answered from
		// the cache, which spends nothing. The chaos drill runs without
		// the cache: it replays tool steps to check their side effects.
		Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: dailyBudget}}},
		Cache: cache,
	})
}

// routeOf is route i of the quickstart over ep: its breaker, retry
// (with attempt timeouts that end the fakes' stalls) and validate, each
// layer logging to logger (nil: none).
func routeOf(i int, ep *endpoint, logger *slog.Logger) stack.Route {
	name := dial.Providers[i].Name
	caps := prices[i]
	caps.Provider, caps.ContextWindow, caps.Tools = name, 128_000, true
	return stack.Route{
		Route:   portico.Route{Name: name, Model: ep.model, Capabilities: caps},
		Breaker: breaker.Config{OpenFor: 200 * time.Millisecond, Logger: logger},
		Retry: retry.Config{
			Logger: logger,
			Backoff: retry.Backoff{
				BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond,
				MaxRetryAfter: 500 * time.Millisecond, // a longer Retry-After moves on to the next route
			},
			Timeouts:       retry.Timeouts{Attempt: time.Second, FirstChunk: 750 * time.Millisecond}, // ends the stalls
			MinAttemptTime: 50 * time.Millisecond,
		},
	}
}

// dailyBudget is each tenant's spend budget per day, in US dollars.
const dailyBudget = 1.0

// requestDeadline is the stack's end-to-end deadline, split across the
// routes.
const requestDeadline = 5 * time.Second

// countCalls counts the calls the fallback group places on the route and
// how they end.
func (rs *routeStats) countCalls(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		resp, err := next.Generate(ctx, req)
		rs.mu.Lock()
		defer rs.mu.Unlock()
		rs.calls++
		if err != nil {
			rs.failed[portico.ClassOf(err)]++
		} else {
			rs.answered++
		}
		return resp, err
	})
}

// countAttempts counts the attempts that reach the adapter, and those of
// them that the adapter sent (every attempt but one that failed before its
// request was written: Error.NotSent).
//
// It also notes when each attempt starts and how much of its deadline is
// left then.
func (rs *routeStats) countAttempts(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		now := time.Now()
		dl, ok := ctx.Deadline()
		rs.mu.Lock()
		rs.attemptAt = append(rs.attemptAt, now)
		if left := dl.Sub(now); ok && (len(rs.attemptAt) == 1 || left < rs.minLeft) {
			rs.minLeft = left
		}
		if ok && !now.Before(dl) {
			rs.lateStarts++
		}
		rs.mu.Unlock()
		resp, err := next.Generate(ctx, req)
		var pe *portico.Error
		notSent := errors.As(err, &pe) && pe.NotSent
		rs.mu.Lock()
		defer rs.mu.Unlock()
		rs.attempts++
		if !notSent {
			rs.sent++
		}
		return resp, err
	})
}
