package fakeanthropic

import (
	"cmp"
	"net/http"
	"sync"
	"time"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// Server is an Anthropic-compatible Messages API server that injects faults.
// Its methods are safe for concurrent use.
type Server struct {
	core   *fakecore.Server
	models map[string]*model
}

// model is the Anthropic-specific state of one served model: its rate-limit
// windows and its prompt cache.
type model struct {
	cfg   ModelConfig
	quota fakecore.Quota // requests, input tokens, output tokens (RateLimit)

	mu    sync.Mutex               // guards cache
	cache map[uint64]time.Duration // prompt cache: prefix hash -> end of life, on the server's clock
}

// New returns a Server that is not listening: serve its [Server.Handler]
// yourself. Use [Start] or [StartPipe] for a listening one. New fails when two
// models share a name, a fault's Fraction is outside [0, 1] or the fractions
// sum above 1, a FaultStatus's Status is neither 0 nor 200-599 (below 400
// only with a Body), or a fault's AfterChunks or Stall is negative; messages
// begin with "fakeanthropic:".
func New(cfg Config) (*Server, error) { return open(cfg, nil) }

// open is [New], then serve on the Server's core unless serve is nil.
func open(cfg Config, serve func(*fakecore.Server)) (*Server, error) {
	if len(cfg.Models) == 0 {
		cfg.Models = []ModelConfig{{Name: DefaultModel}}
	}
	s := &Server{models: make(map[string]*model, len(cfg.Models))}
	cc := fakecore.Config{Seed: cfg.Seed, OnRequest: cfg.OnRequest, RecordLimit: cfg.RecordLimit, Handler: cfg.Handler}
	for _, mc := range cfg.Models {
		mc.Name = cmp.Or(mc.Name, DefaultModel)
		s.models[mc.Name] = &model{cfg: mc}
		cc.Models = append(cc.Models, fakecore.Model{Name: mc.Name, Faults: mc.Faults, Script: mc.Script,
			Pacing: fakecore.Pacing{Latency: mc.Latency, Jitter: mc.Jitter, TTFT: mc.TTFT, TokensPerSecond: mc.TokensPerSecond,
				ThinkEvery: mc.ThinkEvery, KeepAliveEvery: mc.PingEvery}})
	}
	core, err := fakecore.New(s.dialect(), cc)
	if err != nil {
		return nil, err
	}
	s.core = core
	if serve != nil {
		serve(core)
	}
	return s, nil
}

// Start returns a Server listening on 127.0.0.1 on a free port (an
// [net/http/httptest.Server]). Close it when done. Errors are those of [New].
func Start(cfg Config) (*Server, error) { return open(cfg, (*fakecore.Server).Start) }

// StartPipe returns a Server served over in-memory connections (net.Pipe): no
// socket, no port, so it runs inside a testing/synctest bubble where its
// latencies and stalls pass in virtual time. Reach it only through
// [Server.Client]; [Server.URL] is a placeholder host that the Client's
// transport dials in memory. Start it and Close it inside the same bubble.
// Errors are those of [New].
func StartPipe(cfg Config) (*Server, error) { return open(cfg, (*fakecore.Server).StartPipe) }

// URL returns the server's root URL without a trailing slash
// ("http://127.0.0.1:PORT"; "http://fakeanthropic.pipe" for [StartPipe]), or
// "" for a Server made by [New].
func (s *Server) URL() string { return s.core.URL() }

// BaseURL returns URL()+"/", what an Anthropic SDK takes as its base URL
// (anthropic-sdk-go: option.WithBaseURL(s.BaseURL()); it appends
// "v1/messages").
func (s *Server) BaseURL() string { return s.URL() + "/" }

// Client returns an *http.Client that reaches the server: the loopback client
// for [Start], the in-memory one for [StartPipe], nil for [New].
func (s *Server) Client() *http.Client { return s.core.Client() }

// Close ends every stall and in-flight answer, shuts the server down and
// waits until its goroutines have exited. It is safe to call more than once.
func (s *Server) Close() { s.core.Close() }

// Requests returns a copy of the requests recorded so far, in order of arrival:
// every request, up to Config.RecordLimit of them.
func (s *Server) Requests() []Request { return s.core.Requests() }

// Count returns how many requests named the model so far, faulty or not,
// including requests for unknown models.
func (s *Server) Count(modelName string) int { return s.core.Count(modelName) }

// Handler returns the server's http.Handler, serving POST /v1/messages
// and /v1/messages/count_tokens.
// Everything else is a 404 in Anthropic's format.
func (s *Server) Handler() http.Handler { return s.core.Handler() }
