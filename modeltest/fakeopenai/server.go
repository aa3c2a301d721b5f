package fakeopenai

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Server is an OpenAI-compatible chat-completions server that injects faults.
// Its methods are safe for concurrent use.
type Server struct {
	cfg    Config
	models map[string]*model
	start  time.Time
	ctx    context.Context // done when Close begins: ends every stall
	cancel context.CancelFunc

	mu       sync.Mutex
	requests []Request
	counts   map[string]int // requests per model name

	ts     *httptest.Server // loopback, when started with Start
	pipe   *pipeListener    // in-memory, when started with StartPipe
	hs     *http.Server
	served sync.WaitGroup
	client *http.Client
	closed sync.Once
}

// Request is what the server recorded of one request to /v1/chat/completions.
type Request struct {
	// Model is the model asked for.
	Model string
	// Stream is true when the request asked for an event stream.
	Stream bool
	// Traceparent is the W3C traceparent header sent, or "".
	Traceparent string
	// Fault is the fault injected into this request's answer.
	Fault FaultKind
	// Body is the request's JSON body as received.
	Body []byte
}

type model struct {
	cfg ModelConfig

	mu      sync.Mutex
	rng     *rand.Rand
	count   int
	reqWin  int64 // index of the current request window
	reqUsed int
	tokWin  int64
	tokUsed int
}

// New returns a Server that is not listening: serve its [Server.Handler]
// yourself, e.g. over net.Pipe inside a testing/synctest bubble. Use [Start] or
// [StartPipe] for a listening one. New fails when two models share a name, a
// fault's Fraction is outside [0, 1] or the fractions sum above 1, a
// FaultStatus's Status is neither 0 nor an error status (400-599), or a
// fault's AfterChunks is negative; messages begin with "fakeopenai:".
func New(cfg Config) (*Server, error) {
	if len(cfg.Models) == 0 {
		cfg.Models = []ModelConfig{{Name: DefaultModel}}
	}
	s := &Server{cfg: cfg, models: make(map[string]*model, len(cfg.Models)), counts: map[string]int{}, start: time.Now()}
	for _, mc := range cfg.Models {
		if mc.Name == "" {
			mc.Name = DefaultModel
		}
		if _, dup := s.models[mc.Name]; dup {
			return nil, errors.New("fakeopenai: duplicate model " + mc.Name)
		}
		sum := 0.0
		for _, f := range mc.Faults {
			if f.Fraction < 0 || f.Fraction > 1 || f.Fraction != f.Fraction {
				return nil, errors.New("fakeopenai: fault fraction outside [0, 1] for model " + mc.Name)
			}
			if f.Kind == FaultStatus && f.Status != 0 && (f.Status < 400 || f.Status > 599) {
				return nil, errors.New("fakeopenai: fault status " + strconv.Itoa(f.Status) + " is not an error status (400-599) for model " + mc.Name)
			}
			if f.AfterChunks < 0 {
				return nil, errors.New("fakeopenai: negative fault AfterChunks for model " + mc.Name)
			}
			sum += f.Fraction
		}
		if sum > 1+1e-9 {
			return nil, errors.New("fakeopenai: fault fractions sum above 1 for model " + mc.Name)
		}
		h := fnv.New64a()
		h.Write([]byte(mc.Name))
		s.models[mc.Name] = &model{cfg: mc, rng: rand.New(rand.NewPCG(cfg.Seed, h.Sum64()))}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Start returns a Server listening on 127.0.0.1 on a free port (an
// [httptest.Server]). Close it when done. Errors are those of [New].
func Start(cfg Config) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.ts = httptest.NewServer(s.Handler())
	s.client = s.ts.Client()
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
	s.pipe = newPipeListener()
	s.hs = &http.Server{Handler: s.Handler()}
	s.served.Add(1)
	go func() {
		defer s.served.Done()
		_ = s.hs.Serve(s.pipe)
	}()
	s.client = &http.Client{Transport: &http.Transport{DialContext: s.pipe.DialContext}}
	return s, nil
}

// URL returns the server's root URL without a trailing slash
// ("http://127.0.0.1:PORT"; "http://fakeopenai.pipe" for [StartPipe]), or ""
// for a Server made by [New].
func (s *Server) URL() string {
	switch {
	case s.ts != nil:
		return s.ts.URL
	case s.pipe != nil:
		return "http://" + pipeHost
	}
	return ""
}

// BaseURL returns URL()+"/v1/", what an OpenAI SDK takes as its base URL
// (openai-go: option.WithBaseURL(s.BaseURL())).
func (s *Server) BaseURL() string { return s.URL() + "/v1/" }

// Client returns an *http.Client that reaches the server: the loopback client
// for [Start], the in-memory one for [StartPipe], nil for [New].
func (s *Server) Client() *http.Client { return s.client }

// Close ends every stall and in-flight answer, shuts the server down and
// waits until its goroutines have exited. It is safe to call more than once.
func (s *Server) Close() {
	s.closed.Do(func() {
		s.cancel()
		if s.ts != nil {
			s.ts.Close()
		}
		if s.hs != nil {
			_ = s.hs.Close()
			s.served.Wait()
		}
		if s.client != nil {
			s.client.CloseIdleConnections()
		}
	})
}

// Requests returns a copy of the requests recorded so far, in order of arrival:
// every request, up to Config.RecordLimit of them.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests named the model so far, faulty or not,
// including requests for unknown models.
func (s *Server) Count(modelName string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[modelName]
}

// Handler returns the server's http.Handler, serving POST /v1/chat/completions
// (and the same path without /v1). Everything else is a 404 in OpenAI's format.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// pick draws the fault and the latency jitter for the model's next request,
// and counts it.
func (m *model) pick() (Fault, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count++
	var jitter time.Duration
	if m.cfg.Jitter > 0 {
		jitter = time.Duration(m.rng.Int64N(int64(m.cfg.Jitter)))
	}
	if len(m.cfg.Faults) == 0 {
		return Fault{}, jitter
	}
	u := m.rng.Float64()
	acc := 0.0
	for _, f := range m.cfg.Faults {
		acc += f.Fraction
		if u < acc {
			return f, jitter
		}
	}
	return Fault{}, jitter
}

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
