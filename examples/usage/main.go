// Command usage is the README's usage example as a program that compiles in CI:
// a stack built layer by layer over the OpenAI adapter, one request, and a
// switch on the error's class. With OPENAI_API_KEY set it calls OpenAI (or
// OPENAI_BASE_URL); without, it starts the in-process fake server.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	oai "github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/validate"
)

func main() {
	opts, stop := endpoint() // option.WithBaseURL / WithAPIKey; OPENAI_API_KEY by default
	defer stop()

	// The adapter: openai-go with its own retries off (one layer owns retries).
	provider := oai.New(oai.Config{Model: "gpt-4o-mini"}, opts...)

	limiter, err := ratelimit.New(ratelimit.Config{
		Limits:           ratelimit.Limits{Requests: 500, Tokens: 200_000, MaxInFlight: 32}, // per minute, per client
		DefaultMaxTokens: 1024,
		Key:              ratelimit.ByClient,
	})
	if err != nil {
		log.Fatal(err)
	}
	brk, err := breaker.New(breaker.Config{Name: "openai"})
	if err != nil {
		log.Fatal(err)
	}
	retrier, err := retry.New(retry.Config{MinAttemptTime: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	validator, err := validate.New(validate.Config{Length: validate.LengthReject}) // a truncated answer is not accepted
	if err != nil {
		log.Fatal(err)
	}
	// First argument outermost: limit, break, retry, validate, then the provider.
	m := portico.Chain(provider, limiter.Wrap, brk.Wrap, retrier.Wrap, validator.Wrap)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := m.Generate(ctx, &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, "Summarise this ticket: printer on fire.")},
		MaxOutputTokens: 256,
		Identity:        portico.Identity{ClientKey: "tenant-42"},
	})
	switch portico.ClassOf(err) {
	case portico.OK: // accepted: complete (not cut by the token limit), valid, within contract
		fmt.Printf("%s answered (%d+%d tokens): %s\n", resp.Model, resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Text)
	case portico.RateLimited: // a limiter or the provider said: not now
		fmt.Println("try again in", portico.RetryAfterOf(err))
	case portico.Rejected: // shed or breaker open: nothing was sent
		fmt.Println("refused locally:", err)
	default: // permanent, incompatible, invalid response, deadline, ...
		fmt.Println("failed:", portico.ClassOf(err), err)
	}
}

// endpoint returns the SDK options for OpenAI when OPENAI_API_KEY is set, and
// for an in-process fake server otherwise.
func endpoint() ([]option.RequestOption, func()) {
	if os.Getenv("OPENAI_API_KEY") != "" {
		return nil, func() {} // the SDK reads OPENAI_API_KEY and OPENAI_BASE_URL
	}
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "gpt-4o-mini"}}})
	if err != nil {
		log.Fatal(err)
	}
	return []option.RequestOption{option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("fake"), option.WithHTTPClient(srv.Client())}, srv.Close
}
