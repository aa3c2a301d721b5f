// Command service is a multi-tenant HTTP service answering through the
// preset: POST /v1/answer with the tenant's id in the X-Tenant-ID header and
// a JSON body {"prompt": "...", "max_tokens": 256}; it answers JSON, or
// server-sent events when the request accepts text/event-stream. Three routes
// (OpenAI, Anthropic, Gemini, in fallback order) run on in-process fakes by
// default, or on real endpoints by flag (-openai-url with OPENAI_API_KEY,
// -anthropic-url with ANTHROPIC_API_KEY, -gemini-url with GEMINI_API_KEY);
// each tenant has its own rate limit; with -redis the limits, retry budgets,
// breakers and cooldowns are shared by every instance over that Redis. On
// SIGINT or SIGTERM it stops taking requests and lets those in flight finish
// (up to -grace).
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/portico-llm/portico/examples/internal/dial"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "localhost:8080", "address to listen on")
	flag.StringVar(&cfg.redis, "redis", "", "address of a Redis shared by the instances (host:port); empty keeps state in this process")
	flag.IntVar(&cfg.rpm, "rpm", 60, "requests per minute per tenant")
	flag.DurationVar(&cfg.grace, "grace", 10*time.Second, "how long a shutdown waits for the requests in flight")
	dial.Flags(&cfg.url, &cfg.model)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, nil); err != nil {
		log.Fatal(err)
	}
}

// config is the command's flags.
type config struct {
	addr, redis string
	rpm         int
	grace       time.Duration
	url, model  [dial.N]string
}

// serve runs the service until ctx ends, then shuts it down gracefully. When
// ready is not nil it receives the address listened on.
func serve(ctx context.Context, cfg config, ready chan<- string) error {
	svc, err := newService(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.close()
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: svc.handler(), ReadHeaderTimeout: 5 * time.Second}
	log.Printf("service: listening on http://%s (%s)", ln.Addr(), svc.about)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	log.Printf("service: shutting down, waiting up to %v for the requests in flight", cfg.grace)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.grace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
