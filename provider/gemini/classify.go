package gemini

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
	"google.golang.org/genai"
)

// ProviderError is Google's own description of a failure: the google.rpc.Status
// object ({"error":{"code","message","status","details"}}) of an HTTP error
// body or of an error event inside an event stream
// (https://cloud.google.com/apis/design/errors). It is the Err of the
// [*portico.Error] the Model returns for such failures, reachable with
// errors.As.
//
// Message is filled only when [Config.IncludeProviderMessage] is set, since
// Google's messages may quote the request; Error() prints it only then.
type ProviderError struct {
	// Status is the HTTP status (200 for an error event inside a stream).
	Status int
	// Code is the error's "code", the HTTP status the error stands for.
	Code int
	// RPCStatus is the error's "status", a google.rpc.Code name
	// ("RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", "UNAVAILABLE").
	RPCStatus string
	// Reason is the "reason" of a google.rpc.ErrorInfo detail
	// ("API_KEY_INVALID", "RATE_LIMIT_EXCEEDED"), or "".
	Reason string
	// RetryDelay is the "retryDelay" of a google.rpc.RetryInfo detail, parsed
	// by [ParseRetryDelay]; 0 when there is none.
	RetryDelay time.Duration
	// QuotaIDs lists the "quotaId" of each violation of a
	// google.rpc.QuotaFailure detail
	// ("GenerateRequestsPerMinutePerProjectPerModel-FreeTier").
	QuotaIDs []string
	// Message is Google's message; empty unless the Model's Config has
	// IncludeProviderMessage.
	Message string
	// InStream is true for an error event received inside an HTTP 200 stream.
	InStream bool
	// Cause is the SDK's error, a genai.APIError.
	Cause error
}

// Error returns "gemini: [stream ]error status S RPCSTATUS[ reason R][: message]".
func (e *ProviderError) Error() string {
	return adapt.ErrorText("gemini", e.InStream, e.Status, e.Message, " ", e.RPCStatus, " reason ", e.Reason)
}

// Unwrap returns the SDK's error, so errors.As reaches a genai.APIError.
func (e *ProviderError) Unwrap() error { return e.Cause }

// ErrMalformed is [portico.ErrMalformed], the cause of
// [portico.InvalidResponse] errors for an answer that arrived but could not
// be read as a GenerateContentResponse: a body that is not valid JSON or not
// of its shape, an answer without candidates or prompt feedback, a stream
// that ended without a finish reason.
var ErrMalformed = portico.ErrMalformed

// newProviderError reads a genai.APIError's details: RetryInfo, ErrorInfo,
// QuotaFailure (google/rpc/error_details.proto), each matched by the suffix
// of its "@type".
func newProviderError(api genai.APIError, status int, inStream, withMessage bool) *ProviderError {
	pe := &ProviderError{Status: status, Code: api.Code, RPCStatus: ident(api.Status), InStream: inStream, Cause: adapt.Withhold("gemini", api)}
	if withMessage {
		pe.Message = api.Message
		pe.Cause = api
	}
	for _, d := range api.Details {
		typ, _ := d["@type"].(string)
		switch {
		case strings.HasSuffix(typ, "google.rpc.RetryInfo"):
			if s, ok := d["retryDelay"].(string); ok {
				pe.RetryDelay, _ = ParseRetryDelay(s)
			}
		case strings.HasSuffix(typ, "google.rpc.ErrorInfo"):
			r, _ := d["reason"].(string)
			pe.Reason = ident(r)
		case strings.HasSuffix(typ, "google.rpc.QuotaFailure"):
			vs, _ := d["violations"].([]any)
			for _, v := range vs {
				if m, ok := v.(map[string]any); ok {
					if id, ok := m["quotaId"].(string); ok {
						pe.QuotaIDs = append(pe.QuotaIDs, id)
					}
				}
			}
		}
	}
	return pe
}

// ident returns s when it reads as an identifier (letters, digits, '_',
// '.', '-', at most 64 bytes), as Google's status names and reasons do, and
// "" otherwise: the codes the adapter keeps reach error strings, where a
// hostile body's text must not.
func ident(s string) string {
	if len(s) > 64 || strings.ContainsFunc(s, notIdent) {
		return ""
	}
	return s
}

// notIdent reports whether c is other than a letter, digit, '_', '.' or '-'.
func notIdent(c rune) bool {
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-')
}

// classifyStatus maps Google's error to a Class and a short reason. code is
// the HTTP status (or the error's "code" inside a stream), rpc the
// google.rpc.Code name, reason the ErrorInfo reason, message Google's
// message (read, never kept). The rule
// (https://ai.google.dev/gemini-api/docs/troubleshooting):
//
//   - 429 RESOURCE_EXHAUSTED: RateLimited; Unusable when a violated quota is a
//     daily one ("...PerDay...": it resets in hours, not seconds);
//   - 400 INVALID_ARGUMENT whose message says the input token count exceeds
//     the maximum: Incompatible, reason "context window";
//   - 400 with ErrorInfo reason API_KEY_INVALID, 400 FAILED_PRECONDITION
//     (the API is not offered where the caller is, or needs billing), 401
//     UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND: Unusable, a
//     fault of the route (its key, project or model), not of the request;
//   - 413 (a request body past the front end's limit): Incompatible,
//     reason "request too large", as in the other adapters;
//   - 408, 409 ABORTED, 500 INTERNAL, 503 UNAVAILABLE, 504
//     DEADLINE_EXCEEDED and every other 5xx: Transient (504 as the openai
//     adapter has it: the server gave up, it did not answer);
//   - every other status: adapt.Refused (Incompatible), this request on
//     this route, which another provider may serve.
func classifyStatus(code int, rpc, reason, message string, quotaIDs []string) (portico.Class, string) {
	code = cmp.Or(code, rpcHTTP[rpc])
	switch {
	case code == http.StatusTooManyRequests || rpc == "RESOURCE_EXHAUSTED":
		for _, id := range quotaIDs {
			if strings.Contains(id, "PerDay") {
				return portico.Unusable, "daily quota exhausted"
			}
		}
		return portico.RateLimited, "rate limited"
	case code == http.StatusBadRequest && tooLong(message):
		return portico.Incompatible, "context window"
	case code == http.StatusRequestEntityTooLarge:
		return portico.Incompatible, "request too large" // as the other adapters: a route with larger limits may take it
	case reason == "API_KEY_INVALID", rpc == "FAILED_PRECONDITION",
		code == http.StatusUnauthorized, code == http.StatusForbidden, code == http.StatusNotFound:
		return portico.Unusable, "route unusable"
	case code == http.StatusRequestTimeout, code == http.StatusConflict, code >= 500:
		return portico.Transient, "server error"
	}
	return adapt.Refused, "request refused"
}

// rpcHTTP maps google.rpc.Code names to the HTTP status they stand for
// (google/rpc/code.proto), for an error event that carries no code.
var rpcHTTP = map[string]int{
	"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400,
	"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
	"ABORTED": 409, "ALREADY_EXISTS": 409, "RESOURCE_EXHAUSTED": 429, "CANCELLED": 499,
	"INTERNAL": 500, "UNKNOWN": 500, "DATA_LOSS": 500, "UNIMPLEMENTED": 501,
	"UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
}

// tooLong reports whether a 400's message says the prompt is longer than
// the model's window. The Gemini API says "The input token count (1200293)
// exceeds the maximum number of tokens allowed (1048576)."; Vertex AI says
// "Unable to submit request because the input token count is 1234 but model
// only supports up to 1000."
func tooLong(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "input token count") &&
		(strings.Contains(m, "exceeds the maximum") || strings.Contains(m, "only supports up to"))
}

// rules are what the shared classifier needs of Google's errors.
var rules = adapt.Rules{
	Name: "gemini",
	StatusClass: func(status int, _ http.Header, cause error) (portico.Class, string, error) {
		c, reason := classifyStatus(status, "", "", "", nil)
		return c, reason, cause
	},
	NotBuilt:       portico.Unusable,
	NotBuiltReason: "request not sent: client refused it",
}

// classify turns whatever the SDK returned into a *portico.Error: the
// context and the body limit first, then Google's error object (an HTTP
// error body, which the SDK reads into an APIError JSON or not, or an error
// event inside a 200 stream), and what is left (package adapt). x is the
// exchange's record; model names the model asked for.
func (m *Model) classify(ctx context.Context, err error, x *adapt.Exchange, model string) error {
	e := x.NewError(model, err)
	if x.Stopped(ctx, e, &rules) {
		return e
	}
	var api genai.APIError
	if errors.As(err, &api) {
		inStream := x.Status >= 200 && x.Status < 300
		pe := newProviderError(api, x.Status, inStream, m.cfg.IncludeProviderMessage)
		code := x.Status
		if inStream {
			code = api.Code // the status the event stands for
			if code < 400 || code > 599 {
				code = 0 // go by its status name
			}
		}
		e.Code = pe.RPCStatus
		e.Class, e.Reason = classifyStatus(code, pe.RPCStatus, pe.Reason, api.Message, pe.QuotaIDs)
		if inStream && code == 0 && rpcHTTP[pe.RPCStatus] == 0 {
			e.Class, e.Reason = portico.Transient, "stream error" // the server failed after accepting the request
		}
		e.RetryAfter = pe.RetryDelay
		e.Err = pe
		return e
	}
	return x.Failed(e, &rules)
}
