package modeltest

import (
	"errors"
	"time"

	"github.com/portico-llm/portico"
)

// ErrInjected is the cause wrapped by every error this package makes (the *Error
// constructors, [Faults]), so that a test can tell an injected failure from a real
// one with errors.Is(err, modeltest.ErrInjected).
var ErrInjected = errors.New("modeltest: injected fault")

// StatusError returns the error an adapter makes of an HTTP failure with the given
// status code and no error body it recognises, classified by the rule of package
// provider/openai: 429 is [portico.RateLimited]; 401, 402, 403 and 404 (this
// route's credentials, quota, model or deployment) are [portico.Unusable]; 413 is
// [portico.Incompatible], as are 400, 422 and any other status (this
// provider refuses the request, another may not); 408, 409, 424 and every
// 5xx are [portico.Transient]. Status is set; Err is [ErrInjected]. Each
// call returns a new *Error that the caller may change.
func StatusError(status int) *portico.Error {
	c := portico.Incompatible
	switch {
	case status == 429:
		c = portico.RateLimited
	case status == 401, status == 402, status == 403, status == 404:
		c = portico.Unusable
	case status == 413:
		c = portico.Incompatible
	case status == 408, status == 409, status == 424, status >= 500 && status <= 599:
		c = portico.Transient
	}
	return &portico.Error{Class: c, Status: status, Reason: "injected status", Err: ErrInjected}
}

// RateLimitError returns a [portico.RateLimited] error with status 429, provider code
// "rate_limit_exceeded" and the Retry-After hint retryAfter (0: no hint), as an
// adapter reports a provider's rate limit.
func RateLimitError(retryAfter time.Duration) *portico.Error {
	e := StatusError(429)
	e.Code = "rate_limit_exceeded"
	e.RetryAfter = retryAfter
	return e
}

// ConnRefusedError returns a [portico.Transient] error with no status and Reason
// "connection refused": the request could not be sent, so it was neither executed
// nor billed, and retrying the same route is safe.
func ConnRefusedError() *portico.Error {
	return &portico.Error{Class: portico.Transient, Reason: "connection refused", Err: ErrInjected}
}

// TimeoutError returns a [portico.Ambiguous] error with no status and Reason
// "timeout after send": the request was written and no answer came back in time,
// so it may have been executed and billed. It is not the caller's
// deadline: errors.Is(err, context.DeadlineExceeded) is false.
func TimeoutError() *portico.Error {
	return &portico.Error{Class: portico.Ambiguous, Reason: "timeout after send", Err: ErrInjected}
}

// ContextOverflowError returns a [portico.Incompatible] error with status 400 and
// provider code "context_length_exceeded", as OpenAI reports a prompt longer than
// the model's context window: the same route never succeeds, a larger one may.
func ContextOverflowError() *portico.Error {
	return &portico.Error{Class: portico.Incompatible, Status: 400, Code: "context_length_exceeded",
		Reason: "context window exceeded", Err: ErrInjected}
}
