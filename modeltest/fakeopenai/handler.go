package fakeopenai

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// chatRequest is the part of a chat-completions request the server reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	Tools               []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	ResponseFormat    *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	if path != "/chat/completions" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", "Only POST is allowed.")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	var req chatRequest
	jsonErr := json.Unmarshal(body, &req)
	m := s.models[req.Model]
	var fault Fault
	var jitter time.Duration
	if jsonErr == nil && m != nil {
		fault, jitter = m.pick()
	}
	rec := Request{
		Model:       req.Model,
		Stream:      req.Stream,
		Traceparent: r.Header.Get("traceparent"),
		Fault:       fault.Kind,
		Body:        body,
	}
	s.mu.Lock()
	if len(s.requests) < s.recordLimit() {
		s.requests = append(s.requests, rec)
	}
	s.counts[rec.Model]++
	s.mu.Unlock()
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest(rec)
	}
	if tp := r.Header.Get("traceparent"); tp != "" {
		w.Header().Set("traceparent", tp)
	}
	switch {
	case jsonErr != nil:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request.")
		return
	case m == nil:
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model", "The model does not exist or you do not have access to it.")
		return
	case len(req.Messages) == 0:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "messages", "messages must be a non-empty array.")
		return
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	defer context.AfterFunc(s.ctx, stop)() // Close ends every wait
	c := &call{s: s, m: m, req: &req, f: fault, w: w, ctx: ctx, jitter: jitter}
	c.run()
}

// call is one request being answered.
type call struct {
	s   *Server
	m   *model
	req *chatRequest
	f   Fault
	w   http.ResponseWriter
	ctx context.Context

	inputTokens int
	jitter      time.Duration // this request's extra latency
}

// sleep waits d, or until the client goes away or the server closes; it
// reports whether the wait completed. d <= 0 returns true at once.
func (c *call) sleep(d time.Duration) bool {
	if d <= 0 {
		if c.ctx.Err() != nil {
			c.abortIfClosing()
			return false
		}
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		c.abortIfClosing()
		return false
	}
}

// abortIfClosing drops the connection when the server is closing, so that a
// client whose request was interrupted by Close sees a transport error rather
// than an empty 200.
func (c *call) abortIfClosing() {
	if c.s.ctx.Err() != nil {
		panic(http.ErrAbortHandler)
	}
}

// stall waits the fault's Stall, or forever when it is zero.
func (c *call) stall() bool {
	if c.f.Stall <= 0 {
		<-c.ctx.Done()
		c.abortIfClosing()
		return false
	}
	return c.sleep(c.f.Stall)
}

func (c *call) run() {
	c.inputTokens = c.countInput()
	if !c.sleep(c.m.cfg.Latency + c.jitter) {
		return
	}
	if c.f.Kind == FaultStallBeforeHeaders && !c.stall() {
		return
	}
	if refused, reset := c.rateLimitHeaders(); refused != "" {
		c.w.Header().Set("retry-after-ms", strconv.FormatInt(max(1, reset.Milliseconds()), 10))
		writeError(c.w, http.StatusTooManyRequests, refused, "rate_limit_exceeded", "",
			"Rate limit reached for "+refused+". Please try again later.")
		return
	}
	switch c.f.Kind {
	case FaultStatus:
		c.faultStatus()
		return
	case FaultContextLength:
		c.contextLength()
		return
	case FaultDisconnect:
		if !c.req.Stream {
			panic(http.ErrAbortHandler)
		}
	case FaultStreamError:
		if !c.req.Stream {
			if c.streamErrorCode() == "context_length_exceeded" {
				c.contextLength()
			} else {
				writeError(c.w, http.StatusServiceUnavailable, "server_error", c.streamErrorCode(), "", c.message("The server is overloaded. Please try again later."))
			}
			return
		}
	}
	if cw := c.m.cfg.ContextWindow; cw > 0 && c.inputTokens > cw {
		c.contextLength()
		return
	}
	a := c.answer()
	if c.req.Stream {
		c.stream(a)
	} else {
		c.whole(a)
	}
}

// message returns the fault's message, or def.
func (c *call) message(def string) string {
	if c.f.Message != "" {
		return c.f.Message
	}
	return def
}

func (c *call) streamErrorCode() string {
	if c.f.Code != "" {
		return c.f.Code
	}
	return "overloaded"
}

func (c *call) contextLength() {
	max := c.m.cfg.ContextWindow
	writeError(c.w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "messages",
		c.message("This model's maximum context length is "+strconv.Itoa(max)+" tokens. However, your messages resulted in "+strconv.Itoa(c.inputTokens)+" tokens. Please reduce the length of the messages."))
}

func (c *call) faultStatus() {
	f := c.f
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	h := c.w.Header()
	if f.RetryAfterMS > 0 {
		h.Set("retry-after-ms", strconv.FormatInt(f.RetryAfterMS.Milliseconds(), 10))
	}
	if f.RetryAfter > 0 {
		if f.RetryAfterDate {
			h.Set("retry-after", time.Now().Add(f.RetryAfter).UTC().Format(http.TimeFormat))
		} else {
			h.Set("retry-after", strconv.FormatInt(int64(math.Ceil(f.RetryAfter.Seconds())), 10))
		}
	}
	if f.ShouldRetry != "" {
		h.Set("x-should-retry", f.ShouldRetry)
	}
	typ, code, param, msg := "server_error", "", "", "The server had an error while processing your request."
	switch {
	case status == http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."
	case status == http.StatusUnauthorized:
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case status == http.StatusForbidden:
		typ, code, msg = "invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported."
	case status == http.StatusNotFound:
		typ, code, param, msg = "invalid_request_error", "model_not_found", "model", "The model does not exist or you do not have access to it."
	case status == http.StatusServiceUnavailable:
		msg = "The server is overloaded or not ready yet."
	case status < 500:
		typ, msg = "invalid_request_error", "Invalid request."
	}
	if f.Code != "" {
		code = f.Code
	}
	if f.Type != "" {
		typ = f.Type
	}
	writeError(c.w, status, typ, code, param, c.message(msg))
}

// rateLimitHeaders sets the x-ratelimit-* headers when the model has a
// RateLimit. When Enforce refuses the request it returns which limit
// ("requests" or "tokens") and when its window resets.
func (c *call) rateLimitHeaders() (refused string, reset time.Duration) {
	rl := c.m.cfg.RateLimit
	if rl == nil {
		return "", 0
	}
	q := c.m.quota(time.Since(c.s.start), c.inputTokens+c.maxOutput())
	h := c.w.Header()
	if rl.Requests > 0 {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(rl.Requests))
		h.Set("x-ratelimit-remaining-requests", strconv.Itoa(q.remReq))
		h.Set("x-ratelimit-reset-requests", FormatReset(q.resetReq))
	}
	if rl.Tokens > 0 {
		h.Set("x-ratelimit-limit-tokens", strconv.Itoa(rl.Tokens))
		h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(q.remTok))
		h.Set("x-ratelimit-reset-tokens", FormatReset(q.resetTok))
	}
	switch q.refused {
	case "requests":
		return q.refused, q.resetReq
	case "tokens":
		return q.refused, q.resetTok
	}
	return "", 0
}

// FormatReset formats a reset duration as OpenAI's x-ratelimit-reset-* headers
// do: Go's duration syntax rounded to the millisecond ("1s", "6m0s", "20ms",
// "1.5s"); negative durations format as "0s".
func FormatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d.Round(time.Millisecond).String()
}

// writeError writes an error in OpenAI's format; empty code and param are null.
func writeError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: msg, Type: typ}
	if code != "" {
		b.Code = &code
	}
	if param != "" {
		b.Param = &param
	}
	data, _ := json.Marshal(map[string]body{"error": b})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// recordLimit is how many requests Requests keeps: Config.RecordLimit, or
// DefaultRecordLimit when it is zero, or none when it is negative.
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
