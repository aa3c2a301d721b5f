package main

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// sharedRoutes is the README's Redis snippet: twoRoutes's stack for one of
// ten instances, every layer's state shared over Redis (rdb), each limiter
// failing open on its 1/10 share while Redis is down. The caller calls
// stop when done with the stack.
func sharedRoutes(rdb *redis.Client, primary, secondary portico.Model) (st *stack.Stack, stop func(), err error) {
	s, err := redisstore.New(redisstore.Config{Client: rdb}) // Timeout 50 ms, Probe 1 s
	if err != nil {
		return nil, nil, err
	}
	buckets := ratelimit.Shared{Store: s.Buckets(), FailOpen: true, Instances: 10} // Instances only with FailOpen
	budgets := retry.Shared{Store: s.Budgets(), FailOpen: true, Instances: 10}
	cool := s.Cooldowns() // read from a local copy, refreshed every 100 ms
	route := func(name string, m portico.Model, window int) stack.Route {
		return stack.Route{
			Route:   portico.Route{Name: name, Model: m, Capabilities: portico.Capabilities{Provider: name, ContextWindow: window}},
			Limiter: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 5_000, Tokens: 2_000_000}, Shared: buckets}, // the account's, per minute
			Retry:   retry.Config{Budget: retry.Budget{Shared: budgets}},
			Breaker: breaker.Config{Shared: cool}, // one instance trips, every instance skips the route
		}
	}
	st, err = stack.New(stack.Config{
		Routes:   []stack.Route{route("openai", primary, 128_000), route("anthropic", secondary, 200_000)},
		Client:   &ratelimit.Config{Limits: ratelimit.Limits{Requests: 600, Tokens: 200_000}, Shared: buckets}, // per client per minute
		Fallback: fallback.Config{Cooldowns: cool},                                                             // a 429's Retry-After, fleet-wide
		Deadline: 30 * time.Second,
	})
	if err != nil {
		cool.Close()
		s.Close()
		return nil, nil, err
	}
	// Stopping closes the cooldowns' refresher and sends the store's queued
	// settles (redisstore settles after the call returns).
	return st, func() { cool.Close(); s.Close() }, nil
}
