package fakecore

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// DefaultRecordLimit is the number of requests a Server records when
// Config.RecordLimit is zero.
const DefaultRecordLimit = 10000

// Request is what a server recorded of one request to its API.
type Request struct {
	// Model is the model asked for.
	Model string
	// Stream is true when the request asked for an event stream.
	Stream bool
	// Traceparent is the W3C traceparent header sent, or "".
	Traceparent string
	// Fault is the fault injected into this request's answer.
	Fault FaultKind
	// Body is the request's body as received.
	Body []byte
}

// Pacing is how fast a model answers. The zero Pacing is instant.
type Pacing struct {
	// Latency is waited before the response headers, on every request.
	Latency time.Duration
	// Jitter adds to Latency a uniform wait in [0, Jitter) drawn from the
	// model's seeded generator.
	Jitter time.Duration
	// TTFT is the time from the headers to the first token of a stream; a
	// whole answer waits it too before its body.
	TTFT time.Duration
	// TokensPerSecond is the pace after the first token: a stream waits
	// 1/TokensPerSecond between tokens, a whole answer (n-1)/TokensPerSecond
	// for n tokens. Zero means instant.
	TokensPerSecond float64
	// ThinkEvery, when positive, makes a stream reason while it waits its
	// TTFT: a reasoning event (the dialect's [Waiting].Think) at once and
	// every ThinkEvery until TTFT has passed. Zero means none.
	ThinkEvery time.Duration
	// KeepAliveEvery, when positive and ThinkEvery is zero, makes a stream
	// send keep-alives while it waits its TTFT: one ([Waiting].KeepAlive)
	// at once and every KeepAliveEvery until TTFT has passed. Zero means
	// none.
	KeepAliveEvery time.Duration
}

// Model is what the core keeps of one served model.
type Model struct {
	// Name is the model name requests ask for.
	Name string
	// Pacing is its speed.
	Pacing Pacing
	// Faults are drawn by fraction: one uniform draw u in [0,1) per request
	// picks the first fault whose cumulative Fraction exceeds u, or none.
	Faults []Fault
	// Script, when non-empty, decides the model's first len(Script) requests
	// in order of arrival: request i gets Script[i] (a zero Fault answers
	// normally) and draws nothing; later requests draw from Faults.
	Script []Fault
}

// Config is what a dialect passes to [New].
type Config struct {
	// Seed makes fault draws and jitter deterministic per model.
	Seed uint64
	// Models are the models served; names must be distinct.
	Models []Model
	// OnRequest, when non-nil, is called with each recorded request before
	// it is answered, on the request's goroutine.
	OnRequest func(Request)
	// RecordLimit bounds the requests kept for Requests: zero means
	// DefaultRecordLimit, negative records none.
	RecordLimit int
	// Handler, when non-nil, answers every request instead of the dialect,
	// after the core has recorded it (its body is restored for Handler).
	Handler http.Handler
}

// Dialect is a provider's wire format, the part of a fake server that is
// not the core's. R is the dialect's decoded request.
type Dialect[R any] struct {
	// Name is the package name: it begins error messages ("fakeopenai: ")
	// and names the in-memory host ("fakeopenai.pipe").
	Name string
	// Route reports whether r is for the API (path and method); when it is
	// not, Route has written the answer and nothing is recorded.
	Route func(w http.ResponseWriter, r *http.Request) bool
	// Decode reads a request body: the model it names, whether it streams,
	// and the decoded request. A non-nil error means the body is no request;
	// the request is recorded (model "", no fault) and BadRequest answers it.
	Decode func(r *http.Request, body []byte) (model string, stream bool, req R, err error)
	// BadRequest answers a body Decode refused.
	BadRequest func(c *Call, err error)
	// UnknownModel answers a request for a model not served.
	UnknownModel func(c *Call)
	// Serve answers a request for a served model once its latency and any
	// stall before the headers have passed.
	Serve func(c *Call, req R)
	// MalformedEvent renders FaultMalformed inside a stream: the event's
	// name ("" for a data-only event) and data that does not decode. Nil
	// means [DefaultMalformedEvent]. A dialect whose SDK skips events
	// without a name (Anthropic's) names it.
	MalformedEvent func() (name string, data []byte)
}

// DefaultMalformedEvent is the malformed event of a Dialect without its
// own: a data-only event whose data is a chat-completion chunk cut short,
// as OpenAI-compatible servers frame events.
func DefaultMalformedEvent() (name string, data []byte) {
	return "", []byte(`{"id": "broken", "choices": [`)
}

// Server is the dialect-independent part of a fake server. Its methods are
// safe for concurrent use.
type Server struct {
	name      string
	cfg       Config
	malformed func() (name string, data []byte)
	models    map[string]*model
	serve     http.HandlerFunc
	ctx       context.Context // done when Close begins: ends every stall
	cancel    context.CancelFunc
	started   time.Time

	mu       sync.Mutex
	requests []Request
	counts   map[string]int

	ts     *httptest.Server // loopback, after Start
	pipe   *pipeListener    // in-memory, after StartPipe
	hs     *http.Server
	served sync.WaitGroup
	client *http.Client
	closed sync.Once
}

// model is one served model's mutable state.
type model struct {
	cfg   Model
	mu    sync.Mutex
	rng   *rand.Rand
	count int // requests so far, scripted or not
}

// New returns a Server that is not listening, serving the dialect d. It
// fails when two models share a name, a drawn fault's Fraction is outside
// [0, 1] or the fractions sum above 1, a FaultStatus's Status is neither 0
// nor 200-599 (below 400 only with a Body), or an AfterChunks or Stall is
// negative; messages begin with d.Name and ": ".
func New[R any](d Dialect[R], cfg Config) (*Server, error) {
	s := &Server{name: d.Name, cfg: cfg, models: make(map[string]*model, len(cfg.Models)), counts: map[string]int{}, started: time.Now()}
	for _, mc := range cfg.Models {
		if _, dup := s.models[mc.Name]; dup {
			return nil, errors.New(d.Name + ": duplicate model " + mc.Name)
		}
		sum := 0.0
		for _, f := range mc.Faults {
			if err := f.check(false); err != nil {
				return nil, errors.New(d.Name + ": " + err.Error() + " for model " + mc.Name)
			}
			sum += f.Fraction
		}
		for _, f := range mc.Script {
			if err := f.check(true); err != nil {
				return nil, errors.New(d.Name + ": script step: " + err.Error() + " for model " + mc.Name)
			}
		}
		if sum > 1+1e-9 {
			return nil, errors.New(d.Name + ": fault fractions sum above 1 for model " + mc.Name)
		}
		h := fnv.New64a()
		h.Write([]byte(mc.Name))
		s.models[mc.Name] = &model{cfg: mc, rng: rand.New(rand.NewPCG(cfg.Seed, h.Sum64()))}
	}
	s.malformed = d.MalformedEvent
	if s.malformed == nil {
		s.malformed = DefaultMalformedEvent
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.serve = func(w http.ResponseWriter, r *http.Request) { serveWith(s, d, w, r) }
	return s, nil
}

// serveWith is the core's handler: route, read, decode, draw, record, pace,
// then the dialect (or Config.Handler) answers.
func serveWith[R any](s *Server, d Dialect[R], w http.ResponseWriter, r *http.Request) {
	if s.cfg.Handler == nil && !d.Route(w, r) {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	name, stream, req, decErr := d.Decode(r, body)
	m := s.models[name]
	var fault Fault
	var jitter time.Duration
	if decErr == nil && m != nil {
		fault, jitter = m.pick()
	}
	rec := Request{Model: name, Stream: stream, Traceparent: r.Header.Get("traceparent"), Fault: fault.Kind, Body: body}
	s.mu.Lock()
	if len(s.requests) < s.recordLimit() {
		s.requests = append(s.requests, rec)
	}
	s.counts[name]++
	s.mu.Unlock()
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest(rec)
	}
	if s.cfg.Handler != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.cfg.Handler.ServeHTTP(w, r)
		return
	}
	if tp := r.Header.Get("traceparent"); tp != "" {
		w.Header().Set("traceparent", tp)
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	defer context.AfterFunc(s.ctx, stop)() // Close ends every wait
	c := &Call{W: w, R: r, Ctx: ctx, Fault: fault, Model: name, Stream: stream, s: s}
	switch {
	case decErr != nil:
		d.BadRequest(c, decErr)
		return
	case m == nil:
		d.UnknownModel(c)
		return
	}
	c.pacing = m.cfg.Pacing
	if !c.Sleep(c.pacing.Latency + jitter) {
		return
	}
	if fault.Kind == FaultStallBeforeHeaders && !c.Stall() {
		return
	}
	d.Serve(c, req)
}

// pick returns the fault and latency jitter of the model's next request, and
// counts it: the next script step, else one seeded draw.
func (m *model) pick() (Fault, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.count
	m.count++
	var jitter time.Duration
	if m.cfg.Pacing.Jitter > 0 {
		jitter = time.Duration(m.rng.Int64N(int64(m.cfg.Pacing.Jitter)))
	}
	if i < len(m.cfg.Script) {
		return m.cfg.Script[i], jitter
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

// Start serves on 127.0.0.1 on a free port (an [httptest.Server]).
func (s *Server) Start() {
	s.ts = httptest.NewServer(s.serve)
	s.client = s.ts.Client()
}

// StartPipe serves over in-memory connections (net.Pipe), for a
// testing/synctest bubble: reach it through [Server.Client] only.
func (s *Server) StartPipe() {
	s.pipe = newPipeListener(s.name + ".pipe")
	s.hs = &http.Server{Handler: s.serve}
	s.served.Add(1)
	go func() {
		defer s.served.Done()
		_ = s.hs.Serve(s.pipe)
	}()
	s.client = &http.Client{Transport: &http.Transport{DialContext: s.pipe.DialContext}}
}

// Handler returns the server's handler, for a Server that is not started.
func (s *Server) Handler() http.Handler { return s.serve }

// URL returns the root URL without a trailing slash: "http://127.0.0.1:PORT"
// after Start, "http://NAME.pipe" after StartPipe, "" otherwise.
func (s *Server) URL() string {
	switch {
	case s.ts != nil:
		return s.ts.URL
	case s.pipe != nil:
		return "http://" + s.pipe.host
	}
	return ""
}

// Client returns an *http.Client that reaches the server, or nil when it is
// not started.
func (s *Server) Client() *http.Client { return s.client }

// Close ends every stall and in-flight answer, shuts the server down and
// waits for its goroutines. It is safe to call more than once.
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

// Requests returns a copy of the requests recorded so far, in order of
// arrival, up to Config.RecordLimit of them.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests named the model so far, faulty or not,
// including requests for models not served.
func (s *Server) Count(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[model]
}

// Since returns the time since the server was made, the origin of windows
// a dialect counts (rate limits).
func (s *Server) Since() time.Duration { return time.Since(s.started) }

// Seed returns Config.Seed, for a dialect's deterministic answers.
func (s *Server) Seed() uint64 { return s.cfg.Seed }

func (s *Server) recordLimit() int {
	switch l := s.cfg.RecordLimit; {
	case l == 0:
		return DefaultRecordLimit
	case l < 0:
		return 0
	default:
		return l
	}
}
