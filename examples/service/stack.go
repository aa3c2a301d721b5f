package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// service is the preset stack the handler calls and what to close with it.
type service struct {
	st    *stack.Stack
	about string
	stops []func()
}

// requestDeadline is the preset's end-to-end deadline of one request.
const requestDeadline = 30 * time.Second

// newService opens the routes and builds the preset over them: per tenant a
// rate limit of cfg.rpm requests a minute (Identity.ClientKey, waiting up to
// 2 s for a token, then 429), per route a breaker, retries and validation, a
// fallback across the three. With cfg.redis, every layer's state is shared
// over that Redis, each limiter failing open on its share while Redis is
// down.
func newService(ctx context.Context, cfg config) (*service, error) {
	s := &service{}
	var about []string
	var models [dial.N]portico.Model
	for i, p := range dial.Providers {
		m, stop, err := openRoute(ctx, i, cfg.url[i], cfg.model[i])
		if err != nil {
			s.close()
			return nil, err
		}
		if stop != nil {
			s.stops = append(s.stops, stop)
			about = append(about, "fake "+p.Name)
		} else {
			about = append(about, p.Name+" at "+cfg.url[i])
		}
		models[i] = m
	}
	sc, err := s.shared(cfg.redis)
	if err != nil {
		s.close()
		return nil, err
	}
	if cfg.redis != "" {
		about = append(about, "state shared over Redis at "+cfg.redis)
	}
	s.about = strings.Join(about, ", ")
	var rs []stack.Route
	for i, m := range models {
		rs = append(rs, stack.Route{
			Route: portico.Route{Name: dial.Providers[i].Name, Model: m, Capabilities: portico.Capabilities{Provider: dial.Providers[i].Name, ContextWindow: 128_000,
				InputPrice: prices[i].in / 1e6, OutputPrice: prices[i].out / 1e6}}, // Response.Cost in USD
			Breaker: breaker.Config{Shared: sc.cooldowns},
			Retry:   retry.Config{Budget: retry.Budget{Shared: sc.budgets}, Timeouts: retry.Timeouts{FirstChunk: 10 * time.Second}},
		})
	}
	s.st, err = stack.New(stack.Config{
		Routes: rs,
		Client: &ratelimit.Config{
			Limits:           ratelimit.Limits{Requests: cfg.rpm, Tokens: 100_000, MaxInFlight: 8}, // per tenant, per minute
			Mode:             ratelimit.Wait,
			MaxWait:          2 * time.Second,
			DefaultMaxTokens: 1024,
			Shared:           sc.buckets,
		},
		Fallback: fallback.Config{Cooldowns: sc.cooldowns},
		Deadline: requestDeadline,
	})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("service: %w", err)
	}
	return s, nil
}

// sharedState is what the layers share across instances; every field is zero
// without Redis (each layer then keeps its state in this process).
type sharedState struct {
	buckets   ratelimit.Shared
	budgets   retry.Shared
	cooldowns portico.Cooldowns
}

// shared connects to the Redis at addr, when not empty, and returns the
// layers' shared stores over it; closing s closes them.
func (s *service) shared(addr string) (sharedState, error) {
	if addr == "" {
		return sharedState{}, nil
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true}) // so that redisstore's Timeout bounds each operation
	s.stops = append(s.stops, func() { rdb.Close() })
	store, err := redisstore.New(redisstore.Config{Client: rdb})
	if err != nil {
		return sharedState{}, err
	}
	s.stops = append(s.stops, func() { store.Close() }) // the queued settles sent before the client closes
	cool := store.Cooldowns()
	s.stops = append(s.stops, cool.Close)
	return sharedState{
		buckets:   ratelimit.Shared{Store: store.Buckets(), FailOpen: true, Instances: 3},
		budgets:   retry.Shared{Store: store.Budgets(), FailOpen: true, Instances: 3},
		cooldowns: cool,
	}, nil
}

// close stops what newService opened, in reverse order.
func (s *service) close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
}
