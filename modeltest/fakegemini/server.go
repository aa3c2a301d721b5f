package fakegemini

import (
	"cmp"
	"net/http"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// Server is a Gemini API server (generateContent and streamGenerateContent)
// that injects faults. Its methods are safe for concurrent use.
type Server struct {
	core   *fakecore.Server
	cfg    Config
	models map[string]*ModelConfig
}

// New returns a Server that is not listening: serve its [Server.Handler]
// yourself. Use [Start] or [StartPipe] for a listening one. New fails when
// two models share a name, a fault's Fraction is outside [0, 1] or the
// fractions sum above 1, a FaultStatus's Status is neither 0 nor 200-599
// (below 400 only with a Body), or a fault's AfterChunks or Stall is
// negative; messages begin with "fakegemini:".
func New(cfg Config) (*Server, error) { return open(cfg, nil) }

// open is [New], then serve on the Server's core unless serve is nil.
func open(cfg Config, serve func(*fakecore.Server)) (*Server, error) {
	if len(cfg.Models) == 0 {
		cfg.Models = []ModelConfig{{Name: DefaultModel}}
	}
	s := &Server{cfg: cfg, models: make(map[string]*ModelConfig, len(cfg.Models))}
	cc := fakecore.Config{Seed: cfg.Seed, OnRequest: cfg.OnRequest, RecordLimit: cfg.RecordLimit, Handler: cfg.Handler}
	for i := range cfg.Models {
		mc := &cfg.Models[i]
		mc.Name = cmp.Or(mc.Name, DefaultModel)
		s.models[mc.Name] = mc
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

// StartPipe returns a Server served over in-memory connections (net.Pipe),
// for a testing/synctest bubble, where its latencies and stalls pass in
// virtual time. Reach it only through [Server.Client]; [Server.URL] is a
// placeholder host the Client's transport dials in memory. Start it and
// Close it inside the same bubble. Errors are those of [New].
func StartPipe(cfg Config) (*Server, error) { return open(cfg, (*fakecore.Server).StartPipe) }

// URL returns the server's root URL without a trailing slash
// ("http://127.0.0.1:PORT"; "http://fakegemini.pipe" for [StartPipe]), or
// "" for a Server made by [New]. It is what the genai SDK takes as
// HTTPOptions.BaseURL; the SDK adds the API version ("/v1beta/").
func (s *Server) URL() string { return s.core.URL() }

// Client returns an *http.Client that reaches the server: the loopback
// client for [Start], the in-memory one for [StartPipe], nil for [New].
func (s *Server) Client() *http.Client { return s.core.Client() }

// Close ends every stall and in-flight answer, shuts the server down and
// waits until its goroutines have exited. It is safe to call more than once.
func (s *Server) Close() { s.core.Close() }

// Requests returns a copy of the requests recorded so far, in order of
// arrival, up to Config.RecordLimit of them.
func (s *Server) Requests() []Request { return s.core.Requests() }

// Count returns how many requests named the model so far, faulty or not,
// including requests for unknown models.
func (s *Server) Count(model string) int { return s.core.Count(model) }

// Handler returns the server's http.Handler: POST
// /{version}/models/{model}:generateContent and
// :streamGenerateContent?alt=sse, :countTokens, and the same under Vertex AI's
// /{version}/projects/{p}/locations/{l}/publishers/{pub}/models/{model}.
// Everything else is a 404 NOT_FOUND in Google's error format.
func (s *Server) Handler() http.Handler { return s.core.Handler() }
