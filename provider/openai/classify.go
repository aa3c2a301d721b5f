package openai

import (
	"context"
	"errors"
	"net/http"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

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
	// InStream is true for an error sent inside an HTTP 200 answer: a
	// stream's error event or "error:" line, or an error object as the body.
	InStream bool
	// Cause is the SDK's error (an *openai.Error for HTTP errors), or nil.
	Cause error
}

// Error returns "openai: [stream ]error status S type T code C[: message]".
func (e *ProviderError) Error() string {
	return adapt.ErrorText("openai", e.InStream, e.Status, e.Message, " type ", e.Type, " code ", e.Code)
}

// Unwrap returns the SDK's error, so errors.As reaches an *openai.Error.
func (e *ProviderError) Unwrap() error { return e.Cause }

// ErrMalformed is [portico.ErrMalformed] (the same value), the cause of
// [portico.InvalidResponse] errors for an answer that arrived but is not a
// chat completion: a body that is not valid JSON or is JSON null, fields of
// the wrong type, no choices, no finish reason (streamed or not).
var ErrMalformed = portico.ErrMalformed

// ErrTooLarge is the cause of [portico.InvalidResponse] errors for a response
// body longer than [Config.MaxResponseBytes]: the adapter stopped reading it
// and closed the connection.
var ErrTooLarge = errors.New("openai: response larger than MaxResponseBytes")

// classifyStatus maps an HTTP error status and what its error object says
// to a Class and a short reason, by the table in doc.go, and returns cause,
// the error's cause; then x-should-retry overrides: "true" makes a class
// that is not retryable Transient, "false" makes a retryable one
// Incompatible with cause marked (adapt.NoRetry: advice about this
// request, which moves on; a breaker counts only a run of them).
func classifyStatus(status int, f errorFields, shouldRetry string, cause error) (portico.Class, string, error) {
	c, reason := statusClass(status, recognise(f))
	return adapt.ShouldRetry(shouldRetry, !c.Retryable(), c, reason, cause)
}

// failureClasses are the Class and reason of what an error object says.
var failureClasses = [...]struct {
	class  portico.Class
	reason string
}{
	unknown:   {adapt.Refused, "request refused"}, // this provider's refusal: another may serve it
	overflow:  {portico.Incompatible, "context window"},
	quota:     {portico.Unusable, "quota exhausted"},
	rateLimit: {portico.RateLimited, "rate limited"},
	overload:  {portico.Transient, "overloaded"},
	auth:      {portico.Unusable, "credentials refused"},
	noModel:   {portico.Unusable, "model not found"},
	invalid:   {adapt.Refused, "invalid parameter"},
	// Another provider's policy may answer: Incompatible, as a prompt
	// Gemini blocks and an answer validate refuses for a content filter.
	filtered: {portico.Incompatible, "content filtered"},
	// Bigger than the whole tokens-per-minute limit, which no wait cures
	// (OpenAI says so with a 429): the request's, as a 413.
	tooLarge: {portico.Incompatible, "request too large"},
}

// statusFailures are what the statuses that name one failure mean,
// whatever the error object says.
var statusFailures = map[int]failure{
	http.StatusPaymentRequired: quota,
	http.StatusUnauthorized:    auth,
	http.StatusForbidden:       auth,
	http.StatusNotFound:        noModel,
}

func statusClass(status int, k failure) (portico.Class, string) {
	switch {
	case k == overflow, k == quota, k == tooLarge:
	case k == filtered && status < 500: // OpenRouter's moderation 403, Azure's 400
	case status == http.StatusRequestEntityTooLarge:
		return portico.Incompatible, "request too large"
	case status == http.StatusTooManyRequests:
		if k != overload { // TGI's 429 "Model is overloaded"
			k = rateLimit
		}
	case statusFailures[status] != unknown:
		k = statusFailures[status]
	case status == http.StatusRequestTimeout, status == http.StatusConflict,
		status == http.StatusFailedDependency, status == 498, status >= 500:
		if k != overload && status != http.StatusServiceUnavailable {
			return portico.Transient, "server error"
		}
		k = overload
	case k == overload: // a 4xx that says overloaded is the request's
		k = unknown
	}
	fc := failureClasses[k]
	return fc.class, fc.reason
}

// classifyEvent maps an error sent inside an HTTP 200 answer (a stream's
// error event, an error object as the body) to a Class: what its message,
// code or type say, else the status it states, else Transient (the server
// failed after accepting the request).
func classifyEvent(f errorFields) (portico.Class, string) {
	if k := recognise(f); k != unknown && (k != invalid || f.Status < 500) {
		fc := failureClasses[k]
		return fc.class, fc.reason
	}
	if f.Status != 0 {
		return statusClass(f.Status, unknown)
	}
	return portico.Transient, "stream error"
}

// rules are what the shared classifier needs of OpenAI's errors.
var rules = adapt.Rules{
	Name: "openai",
	StatusClass: func(status int, h http.Header, cause error) (portico.Class, string, error) {
		return classifyStatus(status, errorFields{}, h.Get("x-should-retry"), cause)
	},
	NotBuilt:       portico.Unusable,
	NotBuiltReason: "request not sent: client refused it",
	RateLimit:      func(h http.Header, _ time.Time) *portico.RateLimit { return ParseRateLimit(h) },
	RetryAfter:     ParseRetryAfter,
}

// classify turns whatever the SDK returned into a *portico.Error: the
// context and the body limit first, then an HTTP error status with an error
// object in any server's shape, an error event inside an HTTP 200 stream,
// and what is left (package adapt). x is the exchange's record; model
// names the model asked for.
func (m *Model) classify(ctx context.Context, err error, x *adapt.Exchange, model string) error {
	e := rules.Hints(x.NewError(model, err), x.Header)
	if x.Stopped(ctx, e, &rules) {
		return e
	}
	if x.Status >= 400 {
		f := parseErrorBody(x.ErrBody)
		e.Code = f.Code
		pe := m.providerError(x.Status, f, false)
		var apiErr *oai.Error
		if errors.As(err, &apiErr) {
			pe.Cause = apiErr
		}
		e.Class, e.Reason, e.Err = classifyStatus(x.Status, f, x.Header.Get("x-should-retry"), pe)
		return e
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return m.inBand(parseErrorBody(se.Event.Data), x, model)
	}
	return x.Failed(e, &rules)
}

// inBand returns the error for an error sent inside an HTTP 200 answer: a
// stream's error event or "error:" line, or an error object as the body.
func (m *Model) inBand(f errorFields, x *adapt.Exchange, model string) error {
	e := &portico.Error{Model: model, Status: x.Status, Code: f.Code, RateLimit: ParseRateLimit(x.Header)}
	e.Class, e.Reason = classifyEvent(f)
	e.Err = m.providerError(http.StatusOK, f, true)
	return e
}

// providerError is the ProviderError of an error object, its message kept
// only when the Config includes it.
func (m *Model) providerError(status int, f errorFields, inStream bool) *ProviderError {
	pe := &ProviderError{Status: status, Type: f.Type, Code: f.Code, Param: f.Param, InStream: inStream}
	if m.cfg.IncludeProviderMessage {
		pe.Message = f.Message
	}
	return pe
}
