package fakeopenai

import (
	"net/http"
	"sync"
	"time"

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
	cfg ModelConfig

	mu      sync.Mutex
	reqWin  int64 // index of the current request window
	reqUsed int
	tokWin  int64
	tokUsed int
}

// New returns a Server that is not listening: serve its [Server.Handler]
// yourself. Use [Start] or [StartPipe] for a listening one. New fails when two
// models share a name, a fault's Fraction is outside [0, 1] or the fractions
// sum above 1, a FaultStatus's Status is neither 0 nor 200-599 (below 400
// only with a Body), or a fault's AfterChunks or Stall is negative; messages
// begin with "fakeopenai:".
func New(cfg Config) (*Server, error) {
	if len(cfg.Models) == 0 {
		cfg.Models = []ModelConfig{{Name: DefaultModel}}
	}
	s := &Server{models: make(map[string]*model, len(cfg.Models))}
	cc := fakecore.Config{Seed: cfg.Seed, OnRequest: cfg.OnRequest, RecordLimit: cfg.RecordLimit, Handler: cfg.Handler}
	for _, mc := range cfg.Models {
		if mc.Name == "" {
			mc.Name = DefaultModel
		}
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
	return s, nil
}

// Start returns a Server listening on 127.0.0.1 on a free port (an
// [net/http/httptest.Server]). Close it when done. Errors are those of [New].
func Start(cfg Config) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.core.Start()
	return s, nil
}

// StartPipe returns a Server served over in-memory connections (net.Pipe): no
// socket, no port, so it runs inside a testing/synctest bubble where its
// latencies and stalls pass in virtual time. Reach it only through
// [Server.Client]; [Server.URL] is a placeholder host that the Client's
// transport dials in memory. Start it and Close it inside the same bubble.
// Errors are those of [New].
func StartPipe(cfg Config) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.core.StartPipe()
	return s, nil
}

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

// quotaState is what one request saw of the model's rate-limit windows.
type quotaState struct {
	remReq, remTok     int
	resetReq, resetTok time.Duration
	refused            string // "requests" or "tokens" when Enforce refused it
}

// quota counts one request of the given tokens at elapsed time since start in
// the model's fixed windows, unless Enforce refuses it, and returns what
// remains and when each window resets.
func (m *model) quota(elapsed time.Duration, tokens int) quotaState {
	rl := m.cfg.RateLimit
	rw, tw := rl.ResetRequests, rl.ResetTokens
	if rw <= 0 {
		rw = time.Minute
	}
	if tw <= 0 {
		tw = time.Minute
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := int64(elapsed / rw); w != m.reqWin {
		m.reqWin, m.reqUsed = w, 0
	}
	if w := int64(elapsed / tw); w != m.tokWin {
		m.tokWin, m.tokUsed = w, 0
	}
	q := quotaState{resetReq: rw - elapsed%rw, resetTok: tw - elapsed%tw}
	switch {
	case rl.Enforce && rl.Requests > 0 && m.reqUsed+1 > rl.Requests:
		q.refused = "requests"
	case rl.Enforce && rl.Tokens > 0 && m.tokUsed+tokens > rl.Tokens:
		q.refused = "tokens"
	default:
		m.reqUsed++
		m.tokUsed += tokens
	}
	q.remReq = max(0, rl.Requests-m.reqUsed)
	q.remTok = max(0, rl.Tokens-m.tokUsed)
	return q
}
