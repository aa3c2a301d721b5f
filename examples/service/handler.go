package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/portico-llm/portico"
)

// maxBody bounds a request's body, in bytes.
const maxBody = 1 << 20

// ask is a request's body.
type ask struct {
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens"`
}

// answer is a JSON answer, and the last event of a stream.
type answer struct {
	Text         string  `json:"text,omitempty"`
	Route        string  `json:"route"`
	Model        string  `json:"model"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Millis       int64   `json:"ms"`
}

// failure is the body of an error, and the error event of a stream.
type failure struct {
	Class   string `json:"class"`
	Refuser string `json:"refused_by,omitempty"`
	Error   string `json:"error"`
}

// handler routes POST /v1/answer to s.answer.
func (s *service) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/answer", s.answer)
	return mux
}

// answer serves one call: the tenant from X-Tenant-ID, the prompt from the
// body, through the stack; as server-sent events when the caller accepts
// text/event-stream.
func (s *service) answer(w http.ResponseWriter, r *http.Request) {
	tenant := r.Header.Get("X-Tenant-ID")
	var a ask
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&a)
	switch {
	case tenant == "":
		http.Error(w, "missing X-Tenant-ID header", http.StatusBadRequest)
		return
	case err != nil || a.Prompt == "":
		http.Error(w, `body must be JSON {"prompt": "...", "max_tokens": 256}`, http.StatusBadRequest)
		return
	}
	req := &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, a.Prompt)},
		MaxOutputTokens: a.MaxTokens,
		Identity:        portico.Identity{ClientKey: tenant},
	}
	start := time.Now()
	var sse *events
	if r.Header.Get("Accept") == "text/event-stream" {
		sse = newEvents(w)
		req.OnChunk = sse.chunk
	}
	resp, err := s.st.Generate(r.Context(), req)
	if err != nil {
		log.Printf("service: tenant %q: %v", tenant, portico.ClassOf(err))
		s.fail(w, sse, err)
		return
	}
	out := answer{Route: resp.Route, Model: resp.Model, InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CostUSD: resp.Cost, Millis: time.Since(start).Milliseconds()}
	if sse != nil {
		sse.send("done", out)
		return
	}
	out.Text = resp.Text
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// fail answers err: as an error event when a stream has begun, else with the
// status its class and refuser call for and the error's own Retry-After.
// The error's text names classes, routes and durations, never the prompt.
func (s *service) fail(w http.ResponseWriter, sse *events, err error) {
	f := failure{Class: portico.ClassOf(err).String(), Error: err.Error()}
	if by := portico.RefuserOf(err); by != portico.NotRefused {
		f.Refuser = by.String()
	}
	if sse != nil && sse.started {
		sse.send("error", f)
		return
	}
	if d := portico.RetryAfterOf(err); d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(statusOf(err))
	json.NewEncoder(w).Encode(f)
}

// statusOf is the HTTP status of a failed call: 400 when no route accepts
// the request (the tenant's limit included: a call larger than its bucket
// waits for nothing), 429 when the tenant's own limit refused it for now
// ("your plan"), 503 when Portico or the providers are saturated, 504 when
// time ran out, 499 when the caller left, 502 otherwise.
func statusOf(err error) int {
	switch class := portico.ClassOf(err); {
	case class == portico.Permanent || class == portico.Incompatible:
		return http.StatusBadRequest
	case portico.RefuserOf(err) == portico.ClientLimit:
		return http.StatusTooManyRequests
	}
	switch portico.ClassOf(err) {
	case portico.Rejected, portico.RateLimited:
		return http.StatusServiceUnavailable
	case portico.Deadline:
		return http.StatusGatewayTimeout
	case portico.Canceled:
		return 499 // nginx's "client closed request": nobody reads it
	}
	return http.StatusBadGateway
}

// events writes server-sent events, flushing each.
type events struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newEvents(w http.ResponseWriter) *events {
	return &events{w: w, rc: http.NewResponseController(w)}
}

// chunk sends c's text as a "chunk" event; an error (the caller left) stops
// the stream.
func (e *events) chunk(c portico.Chunk) error {
	if c.Text == "" {
		return nil
	}
	return e.send("chunk", map[string]string{"text": c.Text})
}

// send writes one event of the given name with v as its JSON data.
func (e *events) send(name string, v any) error {
	if !e.started {
		e.started = true
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		e.w.WriteHeader(http.StatusOK)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return err
	}
	if err := e.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
