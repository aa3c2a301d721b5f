package adapt

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/portico-llm/portico"
)

// Rules is what an adapter tells [Exchange.Stopped] and [Exchange.Failed]
// of its provider. Adapters keep one as a package variable.
type Rules struct {
	// Name is the adapter's package name ("openai"); it begins the text of
	// [Withheld] errors.
	Name string
	// StatusClass is the Class, reason and cause of an HTTP error status
	// whose body was not read (it went past the limit); h is the
	// response's headers (x-should-retry), cause the error's cause so far,
	// which it returns or marks ([NoRetry]).
	StatusClass func(status int, h http.Header, cause error) (portico.Class, string, error)
	// NotBuilt and NotBuiltReason classify a call whose request never
	// reached the transport: the SDK refused to build or send it.
	NotBuilt       portico.Class
	NotBuiltReason string
	// RateLimit and RetryAfter read the provider's rate-limit headers and
	// wait hint, at now; nil reads none.
	RateLimit  func(h http.Header, now time.Time) *portico.RateLimit
	RetryAfter func(h http.Header, now time.Time) (time.Duration, bool)
}

// Hints sets e's RateLimit and RetryAfter from h, a response's headers, by
// r's readers; a nil h sets neither. It returns e.
func (r *Rules) Hints(e *portico.Error, h http.Header) *portico.Error {
	if h == nil {
		return e
	}
	now := time.Now()
	if r.RateLimit != nil {
		e.RateLimit = r.RateLimit(h, now)
	}
	if r.RetryAfter != nil {
		e.RetryAfter, _ = r.RetryAfter(h, now) // 0 when it states none
	}
	return e
}

// NewError starts the error of a failed call: its model, the response's
// status and the SDK's error.
func (x *Exchange) NewError(model string, err error) *portico.Error {
	return &portico.Error{Model: model, Status: x.Status, Err: err}
}

// Stopped classifies e when a bound stopped the call, and reports whether
// one did:
//
//   - ctx is done: Canceled or Deadline as the caller's context says, and
//     for a layer's own timeout (a cause matching portico.ErrLayerTimeout)
//     Transient before the request was written, Ambiguous after; Err is
//     ctx.Err() joined with its cause;
//   - the body went past Limit: InvalidResponse wrapping TooLarge, or for an
//     HTTP error the class of its status (r.StatusClass, which may mark
//     the cause).
//
// NotSent is set when the request was not written.
func (x *Exchange) Stopped(ctx context.Context, e *portico.Error, r *Rules) bool {
	if ctxErr := ctx.Err(); ctxErr != nil {
		cause := context.Cause(ctx)
		e.Err = ctxErr
		if cause != ctxErr {
			e.Err = portico.Join(ctxErr, cause)
		}
		layer := errors.Is(cause, portico.ErrLayerTimeout)
		wrote := x.wrote.Load()
		e.NotSent = !wrote // a rate limiter gives it all back
		switch {
		case layer && wrote:
			e.Class, e.Reason = portico.Ambiguous, "timeout after the request was sent"
		case layer:
			e.Class, e.Reason = portico.Transient, "timeout before the request was sent"
		case errors.Is(ctxErr, context.Canceled):
			e.Class = portico.Canceled // Err says "context canceled"
		default:
			e.Class = portico.Deadline // Err says "context deadline exceeded"
		}
		return true
	}
	if x.TooLarge != nil && errors.Is(x.ReadErr, x.TooLarge) {
		e.Class, e.Reason, e.Err = portico.InvalidResponse, "response too large", x.TooLarge
		if x.Status >= 400 {
			e.Class, e.Reason, e.Err = r.StatusClass(x.Status, x.Header, e.Err)
			e.Reason += " (error body too large)"
		}
		return true
	}
	return false
}

// Failed classifies e for a call that failed without the provider's own
// error, and returns it:
//
//   - no response, the request never reached the transport: r.NotBuilt,
//     NotSent, the SDK's error withheld;
//   - no response, the request not written: Transient, NotSent (the server
//     cannot have acted on it);
//   - no response after the request was written: Ambiguous (the outcome is
//     unknown);
//   - a body that broke off: Ambiguous, Err the read error;
//   - anything else (the SDK could not decode the answer): InvalidResponse
//     wrapping portico.ErrMalformed and the SDK's error, withheld.
func (x *Exchange) Failed(e *portico.Error, r *Rules) *portico.Error {
	switch {
	case x.Status == 0 && !x.Reached:
		e.Class, e.Reason, e.NotSent = r.NotBuilt, r.NotBuiltReason, true
		e.Err = Withhold(r.Name, e.Err)
	case x.Status == 0 && x.wrote.Load():
		e.Class, e.Reason = portico.Ambiguous, "transport failed after the request was sent"
	case x.Status == 0:
		e.Class, e.Reason, e.NotSent = portico.Transient, "transport failed before the request was sent", true
	case x.ReadErr != nil:
		e.Class, e.Reason, e.Err = portico.Ambiguous, "response body cut off", x.ReadErr
	default:
		e.Class, e.Reason = portico.InvalidResponse, "malformed response"
		e.Err = portico.Join(portico.ErrMalformed, Withhold(r.Name, e.Err))
	}
	return e
}

// Malformed is the InvalidResponse error, wrapping portico.ErrMalformed, of
// an answer that arrived but is not one; rl is the response's rate limits
// (nil: none).
func (x *Exchange) Malformed(model, reason string, rl *portico.RateLimit) *portico.Error {
	return &portico.Error{Class: portico.InvalidResponse, Model: model, Status: x.Status,
		Reason: reason, Err: portico.ErrMalformed, RateLimit: rl}
}

// Withheld is an SDK error whose text is withheld, since it may quote the
// body it could not read or the request it could not build; errors.Is and
// errors.As still reach it.
type Withheld struct {
	Name string // the adapter's package name
	Err  error
}

// Withhold returns err as a [Withheld] error of the adapter name, or nil
// for nil.
func Withhold(name string, err error) error {
	if err == nil {
		return nil
	}
	return Withheld{Name: name, Err: err}
}

// Error returns "NAME: SDK error (text withheld)".
func (e Withheld) Error() string { return e.Name + ": SDK error (text withheld)" }

// Unwrap returns the SDK's error.
func (e Withheld) Unwrap() error { return e.Err }

// ChunkError is the error of a Generate whose caller's OnChunk returned
// err: err itself when it is a *portico.Error, else Canceled wrapping it.
func ChunkError(err error, model string) error {
	var pe *portico.Error
	if errors.As(err, &pe) {
		return err
	}
	return &portico.Error{Class: portico.Canceled, Model: model, Reason: "chunk callback aborted", Err: err}
}

// ErrorText is the text of an adapter's ProviderError:
// "NAME: [stream ]error status S" followed by each non-empty field of
// fields, pairs of a label and a value (" type ", "overloaded_error"), and
// ": message" when message is not empty.
func ErrorText(name string, inStream bool, status int, message string, fields ...string) string {
	var b strings.Builder
	b.WriteString(name + ": ")
	if inStream {
		b.WriteString("stream ")
	}
	b.WriteString("error status " + strconv.Itoa(status))
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] != "" {
			b.WriteString(fields[i] + fields[i+1])
		}
	}
	if message != "" {
		b.WriteString(": " + message)
	}
	return b.String()
}

// Billed gives err, when it is a *portico.Error without Usage, the usage u
// a stream reported before it failed (what the provider bills for it), so
// that a limiter refunds and a group prices only what was not used. It
// returns err.
func Billed(err error, u portico.Usage) error {
	var pe *portico.Error
	if errors.As(err, &pe) && pe.Usage == nil {
		pe.Usage = &u
	}
	return err
}
