package redisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// Example wires one Store into the three layers that keep state: a
// per-model Limiter that fails open on a tenth of its limits, retry
// budgets that fail closed, and an effect Runner. (It only builds them: a
// call would need a server; the package's tests start one.)
func Example() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	s, err := redisstore.New(redisstore.Config{Client: client, Prefix: "myapp:", Timeout: 50 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	lim, err := ratelimit.New(ratelimit.Config{
		Limits:           ratelimit.Limits{Requests: 500, Tokens: 200_000},
		DefaultMaxTokens: 1024,
		Key:              ratelimit.ByModel,
		Shared:           ratelimit.Shared{Store: s.Buckets(), FailOpen: true, Instances: 10},
	})
	if err != nil {
		panic(err)
	}
	rt, err := retry.New(retry.Config{Budget: retry.Budget{Burst: 20, Shared: retry.Shared{Store: s.Budgets()}}})
	if err != nil {
		panic(err)
	}
	run, err := effect.New(effect.Config{Store: s.Effects()})
	if err != nil {
		panic(err)
	}
	defer run.Close() // ends its write-back of outcomes after a loss
	fmt.Println(lim != nil, rt != nil, run != nil)
	// Output: true true true
}

// ExampleNew shows the client option the Store needs: without
// ContextTimeoutEnabled, go-redis ignores the per-operation deadline.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	_, err := redisstore.New(redisstore.Config{Client: client})
	fmt.Println(err)
	// Output: redisstore: Config.Client without ContextTimeoutEnabled: Config.Timeout could not bound an operation
}

// Example_cooldowns shares route cooldowns, and the primary's open
// breaker, between every instance of a service: the stack's one
// Fallback.Cooldowns field, and the route's Breaker.Shared. (It only
// builds the stack: a call would need a server.)
func Example_cooldowns() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	s, err := redisstore.New(redisstore.Config{Client: client, Refresh: 100 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	cool := s.Cooldowns()
	defer cool.Close()
	answer := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok"}, nil
	})
	st, err := stack.New(stack.Config{
		Routes: []stack.Route{
			{Route: portico.Route{Name: "primary", Model: answer, Capabilities: portico.Capabilities{Quota: "acct-1"}},
				Breaker: breaker.Config{Shared: cool}},
			{Route: portico.Route{Name: "secondary", Model: answer}},
		},
		Fallback: fallback.Config{Cooldowns: cool},
	})
	fmt.Println(st != nil, err)
	// Output: true <nil>
}
