package main

import (
	"context"
	"errors"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// newStack builds the preset stack over the three routes, in fallback
// order: an end-to-end deadline, a per-client rate limit (who gets in),
// then a fallback group; per route a breaker (stop calling a provider that
// is down), retry (the one layer that retries) and validate (HTTP 200 is
// not success) around the adapter. Two counting layers per route feed the
// summary: one sees each call the group places on the route, the other
// each attempt that reaches the adapter.
func newStack(eps [numRoutes]*endpoint, res *results) (*stack.Stack, error) {
	var routes []stack.Route
	for i, ep := range eps {
		p := &providers[i]
		rs := &res.routes[i]
		routes = append(routes, stack.Route{
			Route: portico.Route{Name: p.name, Model: ep.model,
				Capabilities: portico.Capabilities{Provider: p.name, ContextWindow: 128_000}},
			Breaker: breaker.Config{OpenFor: 200 * time.Millisecond},
			Retry: retry.Config{
				Backoff: retry.Backoff{
					BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond,
					MaxRetryAfter: 500 * time.Millisecond, // a longer Retry-After moves on to the next route
				},
				Timeouts:       retry.Timeouts{Attempt: time.Second, FirstChunk: 750 * time.Millisecond}, // ends the stalls
				MinAttemptTime: 50 * time.Millisecond,
			},
			Middleware:      []portico.Middleware{rs.countCalls},
			ModelMiddleware: []portico.Middleware{rs.countAttempts},
		})
	}
	return stack.New(stack.Config{
		Routes: routes,
		ClientLimits: ratelimit.Limits{
			Requests:    600, // per client per minute
			Tokens:      200_000,
			MaxInFlight: 32, // beyond it, shed at once
		},
		ClientMode:       ratelimit.Wait,
		ClientMaxWait:    2 * time.Second,
		DefaultMaxTokens: 256,
		Deadline:         5 * time.Second, // end to end, split across the routes
		// A rate-limited route whose Retry-After is longer than this is left
		// at once for the next route, and cools down until then.
		Fallback: fallback.Config{WaitInPlace: 50 * time.Millisecond},
	})
}

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
func (rs *routeStats) countAttempts(next portico.Model) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
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
