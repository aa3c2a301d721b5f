package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// ProviderError carries Anthropic's own description of a failure: the error
// object of an HTTP error body or of an error event inside an event stream,
// {"type":"error","error":{"type","message","details":{"error_code"}}}
// (https://docs.claude.com/en/api/errors, "Error shapes"). It is the Err of
// the [*portico.Error] the Model returns for such failures, reachable with
// errors.As.
//
// Message is filled only when [Config.IncludeProviderMessage] is set, since
// the API may echo the prompt in it; Error() prints it only then.
type ProviderError struct {
	// Status is the HTTP status (200 for an error event inside a stream).
	Status int
	// Type is the error's "type": "invalid_request_error",
	// "authentication_error", "billing_error", "permission_error",
	// "not_found_error", "request_too_large", "rate_limit_error",
	// "api_error", "timeout_error", "overloaded_error", or a newer one.
	Type string
	// Code is error.details.error_code ("enforced_spend_limit_reached"), or
	// "" when the error has none.
	Code string
	// Message is the provider's message; empty unless the Model's Config has
	// IncludeProviderMessage.
	Message string
	// InStream is true for an error event received inside an HTTP 200 stream.
	InStream bool
	// AfterContent is true for an error event that came after text reached
	// the caller's OnChunk: the answer is cut, and no layer above retries it.
	AfterContent bool
	// Cause is the SDK's error (an *anthropic.Error), or nil.
	Cause error
}

// Error returns "anthropic: [stream ]error status S type T[ code C][: message]".
func (e *ProviderError) Error() string {
	return adapt.ErrorText("anthropic", e.InStream, e.Status, e.Message, " type ", e.Type, " code ", e.Code)
}

// Unwrap returns the SDK's error, so errors.As reaches the SDK's *anthropic.Error.
func (e *ProviderError) Unwrap() error { return e.Cause }

// ErrMalformed is [portico.ErrMalformed], the cause of
// [portico.InvalidResponse] errors for an answer that arrived but could not be
// read as a message: a body that is not JSON or not a message, a message
// without a stop reason, a stream that does not begin with message_start or
// ends without a stop reason.
var ErrMalformed = portico.ErrMalformed

// ErrTooLarge is the cause of [portico.InvalidResponse] errors for a response
// body longer than [Config.MaxResponseBytes]: the adapter stopped reading it
// and closed the connection.
var ErrTooLarge = errors.New("anthropic: response larger than MaxResponseBytes")

// classifyError maps an Anthropic error (its HTTP status, or 200 for an error
// event inside a stream, its type, details.error_code and message) and the
// x-should-retry header to a Class and a short reason, by the table of the
// package documentation (Error classes), whose rows it tries in order: spend
// limits, overload, rate limits, sizes and windows, the route's own faults,
// server errors, the rest; x-should-retry overrides last ("false" marks
// cause, the error's cause, which it returns: adapt.NoRetry). The statuses
// and types are those of https://docs.claude.com/en/api/errors.
func classifyError(status int, typ, code, msg, shouldRetry string, cause error) (portico.Class, string, error) {
	c, reason := baseClass(status, typ, code, strings.ToLower(msg))
	return adapt.ShouldRetry(shouldRetry, reason == reasonRefused || c == portico.Unusable, c, reason, cause)
}

// reasonRefused is the reason of a request refused for no reason the table
// names: adapt.Refused, this request on this route.
const reasonRefused = "request refused"

func baseClass(status int, typ, code, lower string) (portico.Class, string) {
	for i := range classRows {
		if r := &classRows[i]; r.match(status, typ, code, lower) {
			return r.class, r.reason
		}
	}
	switch {
	case status >= 500:
		return portico.Transient, "server error"
	case status == http.StatusOK && typ != "invalid_request_error":
		return portico.Transient, "stream error"
	}
	return adapt.Refused, reasonRefused
}

// classRow is a row of the table of classes: an error matches it when its
// status, type or error_code is one of the row's, or its lower-cased
// message holds one of the row's phrases.
type classRow struct {
	statuses             []int
	types, codes, phrase []string
	class                portico.Class
	reason               string
}

func (r *classRow) match(status int, typ, code, lower string) bool {
	for _, p := range r.phrase {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return slices.Contains(r.statuses, status) || slices.Contains(r.types, typ) || slices.Contains(r.codes, code)
}

// classRows are the rows of baseClass, tried in order; after them every
// other 5xx is a server error.
var classRows = [...]classRow{
	{codes: []string{"enforced_spend_limit_reached", "contract_spend_limit_reached"},
		phrase: []string{"credit balance is too low", "api usage limits"}, class: portico.Unusable, reason: "spend limit reached"},
	{statuses: []int{529}, types: []string{"overloaded_error"}, class: portico.Transient, reason: "overloaded"},
	{statuses: []int{http.StatusTooManyRequests}, types: []string{"rate_limit_error"}, class: portico.RateLimited, reason: "rate limited"},
	{statuses: []int{http.StatusRequestEntityTooLarge}, types: []string{"request_too_large"}, class: portico.Incompatible, reason: "request too large"},
	// fallback learns the window from this reason
	{phrase: []string{"prompt is too long", "exceed context limit"}, class: portico.Incompatible, reason: "context window"},
	{phrase: []string{"maximum allowed number of output tokens"}, class: portico.Incompatible, reason: "max tokens above the model's limit"},
	{statuses: []int{http.StatusUnauthorized}, types: []string{"authentication_error"}, class: portico.Unusable, reason: "credentials refused"},
	{phrase: []string{"organization has been disabled"}, class: portico.Unusable, reason: "account disabled"}, // a 400 invalid_request_error
	{statuses: []int{http.StatusPaymentRequired}, types: []string{"billing_error"}, class: portico.Unusable, reason: "billing refused"},
	{statuses: []int{http.StatusForbidden}, types: []string{"permission_error"}, class: portico.Unusable, reason: "permission refused"},
	{statuses: []int{http.StatusNotFound}, types: []string{"not_found_error"}, class: portico.Unusable, reason: "model not found"},
	{statuses: []int{http.StatusRequestTimeout, http.StatusConflict}, types: []string{"api_error", "timeout_error"},
		class: portico.Transient, reason: "server error"},
}

// streamErrorPrefix begins the SDK's error for an error event whose data it
// could not read as an error object (packages/ssestream).
const streamErrorPrefix = "received error while streaming: "

// rules are what the shared classifier needs of Anthropic's errors. A
// request that never reached the transport was refused by the client
// itself, whose configuration (a profile that does not load, a client
// middleware) refuses every request: params has checked that the body
// encodes.
var rules = adapt.Rules{
	Name: "anthropic",
	StatusClass: func(status int, h http.Header, cause error) (portico.Class, string, error) {
		return classifyError(status, "", "", "", adapt.Header(h, "X-Should-Retry"), cause)
	},
	NotBuilt:       portico.Unusable,
	NotBuiltReason: "request not sent: client refused it",
	RateLimit:      ParseRateLimit,
	RetryAfter:     ParseRetryAfter,
}

// classify turns whatever the SDK returned into a *portico.Error: the
// context and the body limit first, then an HTTP error status or an error
// event that the SDK read as an Anthropic error, an error event whose data
// is not one, and what is left (package adapt). x is the exchange's
// record; model names the model asked for; delivered says whether text
// reached the caller's OnChunk.
func (m *Model) classify(ctx context.Context, err error, x *adapt.Exchange, model string, delivered bool) error {
	e := rules.Hints(x.NewError(model, err), x.Header)
	if x.Stopped(ctx, e, &rules) {
		return e
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		pe := &ProviderError{Status: apiErr.StatusCode, Type: string(apiErr.Type()), Code: string(apiErr.ErrorCode()), Cause: apiErr}
		pe.InStream = apiErr.StatusCode < 300
		pe.AfterContent = pe.InStream && delivered
		h := x.Header
		if h == nil && apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		e.Status = apiErr.StatusCode
		return classified(e, pe, apiErr.Message, h, m.cfg.IncludeProviderMessage)
	}
	// An error event whose data is not an error object: the server failed
	// after accepting the request. Its text may hold the provider's
	// message, so it is dropped unless asked for.
	if msg, ok := strings.CutPrefix(err.Error(), streamErrorPrefix); ok && x.Status == http.StatusOK {
		pe := &ProviderError{Status: http.StatusOK, InStream: true, AfterContent: delivered}
		if m.cfg.IncludeProviderMessage {
			pe.Message = msg
		}
		e.Class, e.Reason, e.Err = portico.Transient, "stream error", pe
		return e
	}
	return x.Failed(e, &rules)
}

// bodyError reads an error object from a 200 body that is not a message
// ({"type":"error","error":{...}}, as some proxies answer), or returns nil.
func (m *Model) bodyError(raw string, x *adapt.Exchange, model string) error {
	var b errorBody
	if json.Unmarshal([]byte(raw), &b) != nil || b.Type != "error" || b.Error.Type == "" {
		return nil
	}
	e := &portico.Error{Model: model, Status: x.Status, RateLimit: ParseRateLimit(x.Header, time.Now())}
	return classified(e, b.providerError(x.Status), b.Error.Message, x.Header, m.cfg.IncludeProviderMessage)
}

// errorBody is Anthropic's error object, {"type": "error", "error":
// {"type", "message", "details": {"error_code"}}}.
type errorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
}

// providerError is the ProviderError of b, answered with status.
func (b *errorBody) providerError(status int) *ProviderError {
	return &ProviderError{Status: status, Type: b.Error.Type, Code: b.Error.Details.ErrorCode}
}

// classified sets e's Code, class and Err (pe, which keeps msg, the
// provider's message, when withMessage) by Anthropic's error pe answered
// with e.Status and headers h, and returns e.
func classified(e *portico.Error, pe *ProviderError, msg string, h http.Header, withMessage bool) *portico.Error {
	if withMessage {
		pe.Message = msg
	}
	e.Code = cmp.Or(pe.Code, pe.Type)
	e.Class, e.Reason, e.Err = classifyError(e.Status, pe.Type, pe.Code, msg, adapt.Header(h, "X-Should-Retry"), pe)
	return e
}
