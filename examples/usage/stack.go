package main

import (
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// twoRoutes is the README's stack snippet: the recommended stack over two
// routes of two providers, a fallback group moving from the first to the
// second (provider/openai's and provider/anthropic's Models, say).
func twoRoutes(primary, secondary portico.Model) (*stack.Stack, error) {
	return stack.New(stack.Config{
		Routes: []stack.Route{
			{Route: portico.Route{Name: "openai", Model: primary, Capabilities: portico.Capabilities{Provider: "openai", ContextWindow: 128_000}}},
			{Route: portico.Route{Name: "anthropic", Model: secondary, Capabilities: portico.Capabilities{Provider: "anthropic", ContextWindow: 200_000}}},
		},
		Client:   &ratelimit.Config{Limits: ratelimit.Limits{Requests: 600, Tokens: 200_000}}, // per client per minute
		Deadline: 30 * time.Second,                                                            // end to end, split across the routes
	})
}
