// Command quickstart is Portico's main job: the preset stack (package stack)
// over three providers, each through its real SDK over HTTP, and what the
// stack did with them.
//
// By default it starts three fake servers in-process on 127.0.0.1 (no
// account, no network): an OpenAI one (package modeltest/fakeopenai) whose
// model answers 503s, 429s with retry-after-ms and stalls, an Anthropic one
// (fakeanthropic) answering 529 overloaded_error and 429s with retry-after,
// and a Gemini one (fakegemini) answering 429 RESOURCE_EXHAUSTED with its
// retryDelay in the body, and 500s. It sends a few hundred concurrent
// requests from many client keys through
//
//	deadline -> per-client rate limit -> fallback [openai, anthropic, gemini]
//	  per route: breaker -> retry -> validate -> adapter
//
// and prints a summary (requests, accepted, attempts, retries by class,
// fallbacks, budget exhaustions, latency) and one line per route: answered,
// failed by class, attempts (and what its server saw), breaker openings.
//
// -openai-url, -anthropic-url and -gemini-url point a route at a real
// endpoint instead, with the key of the provider's usual environment
// variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or
// GOOGLE_API_KEY); the -*-model flags name the models.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	var cfg runConfig
	for _, p := range providers {
		flag.StringVar(&cfg.url[p.id], p.name+"-url", "", p.title+" base URL (e.g. "+p.example+"); empty starts an in-process fake server")
		flag.StringVar(&cfg.model[p.id], p.name+"-model", p.model, p.title+" model name")
	}
	flag.IntVar(&cfg.requests, "n", 400, "requests to send")
	flag.IntVar(&cfg.concurrency, "c", 64, "requests in flight at once")
	flag.IntVar(&cfg.clients, "clients", 40, "client keys (tenants) the requests are spread over")
	flag.Int64Var(&cfg.seed, "seed", 1, "seed of the fake servers' faults")
	flag.Parse()
	if _, err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// runConfig is what the flags set; url and model are indexed by route.
type runConfig struct {
	url, model                     [numRoutes]string
	requests, concurrency, clients int
	seed                           int64
}

// run starts what the routes need, sends the load through the stack and
// prints the summary. It returns what the load saw.
func run(ctx context.Context, out io.Writer, cfg runConfig) (*results, error) {
	if cfg.requests <= 0 || cfg.concurrency <= 0 || cfg.clients <= 0 {
		return nil, fmt.Errorf("-n, -c and -clients must be positive")
	}
	res := newResults()
	var eps [numRoutes]*endpoint
	defer func() {
		for _, ep := range eps {
			if ep != nil {
				ep.close()
			}
		}
	}()
	for _, p := range providers {
		model := cfg.model[p.id]
		if model == "" {
			model = p.model
		}
		ep, err := p.start(ctx, cfg.url[p.id], model, uint64(cfg.seed))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.title, err)
		}
		eps[p.id] = ep
		fmt.Fprintln(out, ep.about)
	}
	st, err := newStack(eps, res)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	load(ctx, st, cfg, res)
	elapsed := time.Since(start)
	// Closing a fake server waits for its handlers, so its counts are final.
	for i, ep := range eps {
		ep.close()
		res.routes[i].server = ep.count()
	}
	res.print(out, elapsed)
	return res, nil
}
