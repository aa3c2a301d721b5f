package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/portico-llm/portico"
)

// exchange watches one HTTP exchange through an SDK middleware: whether the
// request was written, the response's status and headers, and any error while
// reading the body. The classifier needs all three, which the SDK's errors do
// not carry.
type exchange struct {
	reached bool        // the SDK handed a request to the transport
	wrote   atomic.Bool // the transport finished writing the request
	status  int         // the response's status, 0 when none came
	header  http.Header // the response's headers
	readErr error       // the first error reading the body, other than io.EOF
	limit   int64       // the most body bytes to read; 0 means no limit
	read    int64       // body bytes read so far
}

// middleware is the SDK middleware (option.Middleware) recording the exchange.
func (x *exchange) middleware(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	x.reached = true
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			x.wrote.Store(true)
		}
	}}
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), trace))
	res, err := next(r)
	if res != nil {
		x.status, x.header = res.StatusCode, res.Header
		if res.Body != nil {
			res.Body = &watchedBody{rc: res.Body, x: x}
		}
	}
	return res, err
}

// watchedBody records the first read error of a response body.
type watchedBody struct {
	rc io.ReadCloser
	x  *exchange
}

// Read reads at most one byte beyond the exchange's limit, and fails with
// ErrTooLarge once the body has gone past it.
func (b *watchedBody) Read(p []byte) (int, error) {
	x := b.x
	if x.limit > 0 {
		if x.read > x.limit {
			return 0, ErrTooLarge
		}
		if left := x.limit - x.read; int64(len(p)) > left {
			p = p[:left+1]
		}
	}
	n, err := b.rc.Read(p)
	x.read += int64(n)
	if x.limit > 0 && x.read > x.limit {
		n, err = n-1, ErrTooLarge
	}
	if err != nil && err != io.EOF && x.readErr == nil {
		x.readErr = err
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }

// ProviderError carries the provider's own description of a failure: the
// error object of an HTTP error body or of an error event inside an event
// stream. It is the Err of the [*portico.Error] the Model returns for such
// failures, reachable with errors.As.
//
// Message is filled only when [Config.IncludeProviderMessage] is set, since
// providers may echo the prompt in it; Error() prints it only then.
type ProviderError struct {
	// Status is the HTTP status (200 for an error event inside a stream).
	Status int
	// Type is the error's "type" ("invalid_request_error", "server_error").
	Type string
	// Code is the error's "code" ("context_length_exceeded", "overloaded"); a
	// numeric code is kept as its decimal text.
	Code string
	// Param is the error's "param", the request field at fault.
	Param string
	// Message is the provider's message; empty unless the Model's Config has
	// IncludeProviderMessage.
	Message string
	// InStream is true for an error event received inside an HTTP 200 stream.
	InStream bool
	// Cause is the SDK's error (an *openai.Error for HTTP errors), or nil.
	Cause error
}

// Error returns "openai: [stream ]error status S type T code C[: message]".
func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString("openai: ")
	if e.InStream {
		b.WriteString("stream ")
	}
	b.WriteString("error status ")
	b.WriteString(strconv.Itoa(e.Status))
	if e.Type != "" {
		b.WriteString(" type ")
		b.WriteString(e.Type)
	}
	if e.Code != "" {
		b.WriteString(" code ")
		b.WriteString(e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the SDK's error, so errors.As reaches an *openai.Error.
func (e *ProviderError) Unwrap() error { return e.Cause }

// ErrMalformed is [portico.ErrMalformed], the cause of
// [portico.InvalidResponse] errors for an answer that arrived but could not be
// read as a chat completion: a body that is not valid JSON, a completion
// without choices, a stream that ended without a finish reason.
var ErrMalformed = portico.ErrMalformed

// ErrTooLarge is the cause of [portico.InvalidResponse] errors for a response
// body longer than [Config.MaxResponseBytes]: the adapter stopped reading it
// and closed the connection.
var ErrTooLarge = errors.New("openai: response larger than MaxResponseBytes")

// classifyStatus maps an HTTP status, the provider's error code and its
// x-should-retry header to a Class and a short reason. The rule, from the
// issue's table:
//
//   - 429: RateLimited;
//   - 400 with code context_length_exceeded: Incompatible;
//   - 408, 409 and every 5xx: Transient;
//   - every other status: Permanent;
//   - then x-should-retry overrides: "true" makes a non-retryable class
//     Transient, "false" makes a retryable one (Transient, RateLimited)
//     Permanent; Incompatible stays Incompatible under "false".
func classifyStatus(status int, code, shouldRetry string) (portico.Class, string) {
	var c portico.Class
	var reason string
	switch {
	case status == http.StatusTooManyRequests:
		c, reason = portico.RateLimited, "rate limited"
	case status == http.StatusBadRequest && code == "context_length_exceeded":
		c, reason = portico.Incompatible, "context length exceeded"
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status >= 500:
		c, reason = portico.Transient, "server error"
	default:
		c, reason = portico.Permanent, "request refused"
	}
	switch shouldRetry {
	case "true":
		if !c.Retryable() {
			c, reason = portico.Transient, reason+" (x-should-retry: true)"
		}
	case "false":
		if c.Retryable() {
			c, reason = portico.Permanent, reason+" (x-should-retry: false)"
		}
	}
	return c, reason
}

// classifyEvent maps an error event inside an HTTP 200 stream to the class of
// the status it stands for: overload and server errors are Transient, a
// prompt too long is Incompatible, a rate limit is RateLimited, invalid
// requests and auth failures are Permanent, and anything unknown is
// Transient (the server failed after accepting the request). A numeric code
// is read as an HTTP status.
func classifyEvent(typ, code, message string) (portico.Class, string) {
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
		return classifyStatus(n, "", "")
	}
	has := func(words ...string) bool {
		for _, w := range words {
			if typ == w || code == w {
				return true
			}
		}
		return false
	}
	lower := strings.ToLower(message)
	switch {
	case has("context_length_exceeded", "string_above_max_length"),
		strings.Contains(lower, "prompt is too long"),
		strings.Contains(lower, "maximum context length"):
		return portico.Incompatible, "context length exceeded"
	case has("overloaded", "overloaded_error", "server_error", "api_error", "internal_error", "service_unavailable", "timeout"):
		return portico.Transient, "overloaded"
	case has("rate_limit_exceeded", "rate_limit_error", "requests", "tokens"):
		return portico.RateLimited, "rate limited"
	case has("invalid_request_error", "authentication_error", "permission_error", "not_found_error", "invalid_api_key"):
		return portico.Permanent, "request refused"
	}
	return portico.Transient, "stream error"
}

// classify turns whatever the SDK returned into a *portico.Error. x is the
// exchange's record; model names the model asked for.
func (m *Model) classify(ctx context.Context, err error, x *exchange, model string) error {
	now := time.Now()
	e := &portico.Error{Model: model, Status: x.status, Err: err}
	if x.header != nil {
		e.RateLimit = ParseRateLimit(x.header)
		if d, ok := ParseRetryAfter(x.header, now); ok {
			e.RetryAfter = d
		}
	}
	// 1. The context: the caller's cancel or deadline, or a layer's own
	//    timeout, marked by a cause matching portico.ErrLayerTimeout.
	if ctxErr := ctx.Err(); ctxErr != nil {
		cause := context.Cause(ctx)
		e.Err = ctxErr
		if cause != ctxErr {
			e.Err = portico.Join(ctxErr, cause)
		}
		layer := errors.Is(cause, portico.ErrLayerTimeout)
		e.NotSent = !x.wrote.Load() // a rate limiter gives it all back
		switch {
		case layer && x.wrote.Load():
			e.Class, e.Reason = portico.Ambiguous, "attempt timeout after the request was sent"
		case layer:
			e.Class, e.Reason = portico.Transient, "attempt timeout before the request was sent"
		case errors.Is(ctxErr, context.Canceled):
			e.Class = portico.Canceled // Err says "context canceled"
		default:
			e.Class = portico.Deadline // Err says "context deadline exceeded"
		}
		return e
	}
	// 2. A body past Config.MaxResponseBytes, whatever the SDK made of it.
	//    An HTTP error keeps the class of its status (its code is unread).
	if errors.Is(x.readErr, ErrTooLarge) {
		e.Class, e.Reason, e.Err = portico.InvalidResponse, "response too large", ErrTooLarge
		if x.status >= 400 {
			e.Class, e.Reason = classifyStatus(x.status, "", x.header.Get("x-should-retry"))
			e.Reason += " (error body too large)"
		}
		return e
	}
	// 3. An HTTP error status with an OpenAI error body.
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		h := x.header
		if h == nil && apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		e.Status, e.Code = apiErr.StatusCode, apiErr.Code
		e.Class, e.Reason = classifyStatus(apiErr.StatusCode, apiErr.Code, h.Get("x-should-retry"))
		pe := &ProviderError{Status: apiErr.StatusCode, Type: apiErr.Type, Code: apiErr.Code, Param: apiErr.Param, Cause: apiErr}
		if m.cfg.IncludeProviderMessage {
			pe.Message = apiErr.Message
		}
		e.Err = pe
		return e
	}
	// 4. An error event inside an HTTP 200 stream.
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		pe := parseEvent(se.Event.Data)
		e.Class, e.Reason = classifyEvent(pe.Type, pe.Code, pe.Message)
		e.Code = pe.Code
		if !m.cfg.IncludeProviderMessage {
			pe.Message = ""
		}
		e.Err = pe
		return e
	}
	// 5. No response: the transport failed. Before the request was written the
	//    server cannot have acted on it; after, the outcome is unknown.
	if x.status == 0 {
		switch {
		case !x.reached:
			e.Class, e.Reason, e.NotSent = portico.Permanent, "request not built", true
		case x.wrote.Load():
			e.Class, e.Reason = portico.Ambiguous, "transport failed after the request was sent"
		default:
			e.Class, e.Reason, e.NotSent = portico.Transient, "transport failed before the request was sent", true
		}
		return e
	}
	// 6. A response whose body broke off, or did not parse.
	if x.readErr != nil {
		e.Class, e.Reason = portico.Ambiguous, "response body cut off"
		return e
	}
	e.Class, e.Reason = portico.InvalidResponse, "malformed response"
	e.Err = portico.Join(ErrMalformed, err)
	return e
}

// parseEvent reads the error object of a stream's error event. Data is
// {"error":{"message","type","code","param"}}, where code may be a number.
func parseEvent(data []byte) *ProviderError {
	var ev struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Param   json.RawMessage `json:"param"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &ev)
	pe := &ProviderError{Status: http.StatusOK, InStream: true, Type: ev.Error.Type, Message: ev.Error.Message}
	pe.Code = scalar(ev.Error.Code)
	pe.Param = scalar(ev.Error.Param)
	return pe
}

// scalar returns a JSON string's value or a number's text; "" otherwise.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
