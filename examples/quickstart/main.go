// Command quickstart is Portico's main job: it drives the real openai-go SDK over
// HTTP through a Portico stack and prints what the stack did.
//
// By default it starts an OpenAI-compatible fake server in-process on 127.0.0.1
// (package modeltest/fakeopenai: no account, no network) whose model answers
// 429s with Retry-After, 503s and stalls on a fraction of calls, then sends a few
// hundred concurrent requests from several client keys through
//
//	per-client rate limit -> breaker -> retry -> validate -> openai adapter
//
// and prints a summary: requests, accepted, attempts per request, retries by
// class, budget exhaustions, latency p50/p99.
//
// With -base-url (and -model; the key comes from OPENAI_API_KEY) it points the
// same stack at any real OpenAI-compatible endpoint instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

func main() {
	var cfg runConfig
	flag.StringVar(&cfg.baseURL, "base-url", "", "OpenAI-compatible base URL (e.g. https://api.openai.com/v1/); empty starts the in-process fake server")
	flag.StringVar(&cfg.model, "model", "", "model name; defaults to the fake's model, or gpt-4o-mini with -base-url")
	flag.IntVar(&cfg.requests, "n", 400, "requests to send")
	flag.IntVar(&cfg.concurrency, "c", 64, "requests in flight at once")
	flag.IntVar(&cfg.clients, "clients", 5, "client keys the requests are spread over")
	flag.Int64Var(&cfg.seed, "seed", 1, "seed of the fake server's faults")
	flag.Parse()
	if _, err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

type runConfig struct {
	baseURL, model                 string
	requests, concurrency, clients int
	seed                           int64
}

// run sends the load and prints the summary. It returns what the load saw and,
// against the fake server, how many HTTP requests reached it (-1 otherwise).
func run(ctx context.Context, out io.Writer, cfg runConfig) (*results, error) {
	if cfg.requests <= 0 || cfg.concurrency <= 0 || cfg.clients <= 0 {
		return nil, fmt.Errorf("-n, -c and -clients must be positive")
	}
	var srv *fakeopenai.Server
	var opts []option.RequestOption
	if cfg.baseURL == "" {
		var err error
		srv, err = fakeopenai.Start(fakeServer(uint64(cfg.seed)))
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		opts = append(opts, option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("fake"), option.WithHTTPClient(srv.Client()))
		if cfg.model == "" {
			cfg.model = fakeModel
		}
		fmt.Fprintf(out, "fake OpenAI server on %s: model %s answers 429 (5%%), 503 (10%%), stalls (3%%)\n", srv.URL(), fakeModel)
	} else {
		opts = append(opts, option.WithBaseURL(cfg.baseURL))
		if cfg.model == "" {
			cfg.model = "gpt-4o-mini"
		}
	}
	res := results{failed: map[portico.Class]int{}, retries: map[portico.Class]int{}}
	provider := openai.New(openai.Config{Model: cfg.model}, opts...)
	st, err := newStack(provider, &res)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	load(ctx, st, cfg, &res)
	res.serverRequests = -1
	if srv != nil {
		res.serverRequests = srv.Count(cfg.model)
	}
	res.print(out, time.Since(start))
	return &res, nil
}

const fakeModel = "quickstart-model"

// fakeServer is the model the quickstart talks to without -base-url: about 60 ms
// per answer, with 429s that carry retry-after-ms, 503s, and stalls that only an
// attempt timeout ends.
func fakeServer(seed uint64) fakeopenai.Config {
	return fakeopenai.Config{
		Seed: seed,
		Models: []fakeopenai.ModelConfig{{
			Name:            fakeModel,
			Latency:         10 * time.Millisecond,
			TTFT:            20 * time.Millisecond,
			TokensPerSecond: 500,
			OutputTokens:    16,
			Faults: []fakeopenai.Fault{
				{Kind: fakeopenai.FaultStatus, Status: 429, Fraction: 0.05, RetryAfterMsHeader: 40 * time.Millisecond},
				{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 0.10},
				{Kind: fakeopenai.FaultStallBeforeHeaders, Fraction: 0.03},
			},
		}},
	}
}
