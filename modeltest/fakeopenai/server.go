package fakeopenai

import (
	"cmp"
	"net/http"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// Server is an OpenAI-compatible chat-completions server that injects faults.
// Its methods are safe for concurrent use.
type Server struct {
	core   *fakecore.Server
	models map[string]*model
	stored store // the Responses API's stored responses (responses.go)
}

// Request is what the server recorded of one request to /v1/chat/completions:
// Model, Stream, Traceparent (the W3C header sent, also echoed in the
// response, or ""), Fault (the kind injected) and Body (as received). It is
// the same type in every fake of package modeltest.
type Request = fakecore.Request

// model is the OpenAI-specific state of one served model.
type model struct {
	cfg   ModelConfig
	quota fakecore.Quota // requests, tokens (RateLimit)
}

// New returns a Server that is not listening: serve its [Server.Handler]
// yourself. Use [Start] or [StartPipe] for a listening one. New fails when two
// models share a name, a fault's Fraction is outside [0, 1] or the fractions
// sum above 1, a FaultStatus's Status is neither 0 nor 200-599 (below 400
// only with a Body), or a fault's AfterChunks or Stall is negative; messages
// begin with "fakeopenai:".
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
				ThinkEvery: mc.ThinkEvery, KeepAliveEvery: mc.KeepAliveEvery}})
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
// ("http://127.0.0.1:PORT"; "http://fakeopenai.pipe" for [StartPipe]), or ""
// for a Server made by [New].
func (s *Server) URL() string { return s.core.URL() }

// BaseURL returns URL()+"/v1/", what an OpenAI SDK takes as its base URL
// (openai-go: option.WithBaseURL(s.BaseURL())).
func (s *Server) BaseURL() string { return s.URL() + "/v1/" }

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

// Handler returns the server's http.Handler, serving POST /v1/chat/completions,
// /v1/responses and /v1/embeddings (and the same paths without /v1), and
// POST /v1/files, which answers an upload's file object and keeps nothing.
// Everything else is a 404 in OpenAI's format.
func (s *Server) Handler() http.Handler { return s.core.Handler() }
