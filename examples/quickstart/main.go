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
//	response cache -> deadline -> per-client rate limit -> spend budgets
//	  -> fallback [openai, anthropic, gemini]
//	  per route: breaker -> retry -> validate -> adapter
//
// and prints a summary (requests, accepted, attempts, retries by class,
// fallbacks, budget exhaustions, latency, the answers' tokens with their
// cache reads and writes, and their cost at the price pages' prices) and
// one line per route: answered, failed by class, attempts (and what its
// server saw), breaker openings. Every request marks its system prompt as
// a cache breakpoint (portico.Cache5m): the Anthropic fake caches it from
// its cache_control, the OpenAI and Gemini fakes report it cached (and
// reasoning tokens, billed as output).
// Every fourth request asks again what its tenant asked before, so the
// response cache has something to answer; the summary then prints the
// cache's hits and what each tenant spent against its daily budget.
//
// -openai-url, -anthropic-url and -gemini-url point a route at a real
// endpoint instead, with the key of the provider's usual environment
// variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or
// GOOGLE_API_KEY); the -*-model flags name the models.
//
// -chaos runs the chaos drill instead: every fault kind the fakes know (429
// with Retry-After, 5xx, overload, stalls before and after the first token,
// cuts mid-stream, malformed bodies, error events in a 200 stream,
// connection resets, truncated answers, context overflows) on 10%, 30% and
// 50% of every route's calls in turn, a canary in every prompt, a quarter
// of the requests tool steps whose side effects run through package effect
// and which are replayed, and after each run the invariants: every request
// accepted or classified, attempts within the retry budgets' bound, no side
// effect run twice, no attempt started after its deadline and the overshoot
// of calls past it, nothing left behind (goroutines, file descriptors,
// heap), the canary in no span, log record or error string. It exits 1 when
// a run broke one. -plot FILE writes goodput and attempts over time as a
// PNG, a panel per run.
//
// -route shows the preset's routing kinds on the same endpoints instead:
// a weighted split 7:3 between OpenAI and Anthropic (its first choices
// within the binomial bound, the other route behind each), and a cascade
// from Gemini to OpenAI whose cost per request meets seed 000's
// E[C] = c1 + (1-u1) c2; then a key pool (stack.Pool) of three keys
// through a 429 storm on one of them.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/examples/internal/dial"
)

func main() {
	var cfg runConfig
	dial.Flags(&cfg.url, &cfg.model)
	flag.IntVar(&cfg.requests, "n", 400, "requests to send")
	flag.IntVar(&cfg.concurrency, "c", 64, "requests in flight at once")
	flag.IntVar(&cfg.clients, "clients", 40, "client keys (tenants) the requests are spread over")
	flag.Int64Var(&cfg.seed, "seed", 1, "seed of the fake servers' faults")
	chaos := flag.Bool("chaos", false, "the chaos drill: every fault kind of the fakes on 10%, 30% and 50% of calls, and the invariants checked after each run")
	plot := flag.String("plot", "", "write goodput and attempts over time to this PNG file (a panel per run)")
	routing := flag.Bool("route", false, "the routing kinds instead: a weighted split 7:3, a cascade and a key pool through a 429 storm, -n requests each")
	flag.Parse()
	var err error
	switch {
	case *routing:
		var eps [dial.N]*endpoint
		if eps, err = startEndpoints(context.Background(), os.Stdout, cfg); err == nil {
			_, err = runRoute(context.Background(), os.Stdout, eps, cfg.requests, cfg.concurrency)
		}
		closeEndpoints(eps)
	case *chaos:
		_, err = runChaos(context.Background(), os.Stdout, cfg, chaosRates, *plot)
	default:
		var res *results
		if res, err = run(context.Background(), os.Stdout, cfg); err == nil && *plot != "" {
			err = writePlot(*plot, []string{"quickstart"}, []*results{res})
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// runConfig is what the flags set; url and model are indexed by route.
type runConfig struct {
	url, model                     [dial.N]string
	requests, concurrency, clients int
	seed                           int64
	// faultRate, when positive, is a chaos run's: every fake fails that
	// share of its calls with the drill's menu (chaosFaults).
	faultRate float64
	// pipe serves the fakes over net.Pipe, in the caller's synctest bubble.
	pipe bool
}

// run starts what the routes need, sends the load through the stack and
// prints the summary. It returns what the load saw.
func run(ctx context.Context, out io.Writer, cfg runConfig) (*results, error) {
	if cfg.requests <= 0 || cfg.concurrency <= 0 || cfg.clients <= 0 {
		return nil, fmt.Errorf("-n, -c and -clients must be positive")
	}
	res := newResults()
	if cfg.faultRate > 0 {
		if err := res.startChaos(); err != nil {
			return nil, err
		}
	}
	eps, err := startEndpoints(ctx, out, cfg)
	defer closeEndpoints(eps)
	if err != nil {
		return nil, err
	}
	st, err := newStack(eps, res, res.watch)
	if err != nil {
		return nil, err
	}
	res.start = time.Now()
	load(ctx, st, cfg, res)
	elapsed := time.Since(res.start)
	if c := st.Cache(); c != nil {
		res.cache = c.Stats()
	}
	for i := range cfg.clients {
		bs, err := st.Spend().Balances(ctx, &portico.Request{Identity: portico.Identity{ClientKey: "tenant-" + strconv.Itoa(i)}})
		if err != nil {
			return nil, err
		}
		res.spent = append(res.spent, bs[0].Spent)
	}
	// Closing a fake server waits for its handlers, so its counts are final.
	for i, ep := range eps {
		ep.close()
		res.routes[i].server = ep.count()
		if ep.faults != nil {
			for k, n := range ep.faults() {
				res.faults[k] += n
			}
		}
	}
	res.print(out, elapsed)
	return res, nil
}

// startEndpoints starts each route's endpoint as cfg says (a fake, or a
// real one at its -*-url) and prints what it is. On an error, the ones
// started are in eps, for closeEndpoints.
func startEndpoints(ctx context.Context, out io.Writer, cfg runConfig) (eps [dial.N]*endpoint, err error) {
	for i, p := range dial.Providers {
		model := cmp.Or(cfg.model[i], p.Model)
		fo := fakeOptions{seed: uint64(cfg.seed), pipe: cfg.pipe}
		if cfg.faultRate > 0 {
			fo.faults = chaosFaults(cfg.faultRate, i)
		}
		ep, err := starts[i](ctx, cfg.url[i], model, fo)
		if err != nil {
			return eps, fmt.Errorf("%s: %w", p.Title, err)
		}
		eps[i] = ep
		fmt.Fprintln(out, ep.about)
	}
	return eps, nil
}

// closeEndpoints stops the fakes among eps.
func closeEndpoints(eps [dial.N]*endpoint) {
	for _, ep := range eps {
		if ep != nil {
			ep.close()
		}
	}
}
