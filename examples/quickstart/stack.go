package main

import (
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/validate"
)

// newStack wraps the provider in the layers, outermost first: a per-client rate
// limit (who gets in), a breaker (stop calling a model that is down), retry (one
// layer owns retries), validate (HTTP 200 is not success), then the provider.
func newStack(provider portico.Model, res *results) (portico.Model, error) {
	limiter, err := ratelimit.New(ratelimit.Config{
		Limits: ratelimit.Limits{
			Requests:    600, // per client per minute
			Tokens:      200_000,
			MaxInFlight: 32, // beyond it, shed at once
		},
		DefaultMaxTokens: 256,
		Key:              ratelimit.ByClient,
		Mode:             ratelimit.Wait,
		MaxWait:          2 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	brk, err := breaker.New(breaker.Config{
		Name:    "primary",
		OpenFor: 2 * time.Second,
		OnStateChange: func(t breaker.Transition) {
			if t.To == breaker.Open {
				res.mu.Lock()
				res.breakerOpens++
				res.mu.Unlock()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	retrier, err := retry.New(retry.Config{
		Backoff: retry.Backoff{BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond},
		Timeouts: retry.Timeouts{
			Attempt:    time.Second, // ends the fake's stalls
			FirstChunk: 750 * time.Millisecond,
		},
		MinAttemptTime: 50 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	v, err := validate.New(validate.Config{})
	if err != nil {
		return nil, err
	}
	return portico.Chain(provider, limiter.Wrap, brk.Wrap, retrier.Wrap, v.Wrap), nil
}
