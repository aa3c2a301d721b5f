package ratelimit

import (
	"errors"
	"strconv"

	"github.com/portico-llm/portico"
)

// Sentinels, wrapped in the [*portico.Error] a [Limiter] returns, to branch on
// with errors.Is. Every such error has NotSent set: the Limiter refused the
// call before calling the Model it wraps. Those of ErrOverloaded, ErrLimited,
// ErrOverCapacity and [ErrStoreUnavailable] name the Limiter's
// Config.RefusedBy as their RefusedBy ([portico.RefuserOf]): the tenant's
// limit or the route's.
var (
	// ErrOverloaded: the key's in-flight cap was reached and its queue (if any)
	// was full; the call was shed at once. Class [portico.Rejected], Reason
	// "overloaded".
	ErrOverloaded = errors.New("ratelimit: overloaded")
	// ErrLimited: a bucket could not admit the call now (reject mode, or a wait
	// longer than MaxWait or the deadline). Class [portico.RateLimited] with
	// the exact RetryAfter.
	ErrLimited = errors.New("ratelimit: rate limited")
	// ErrOverCapacity: the call's N_in + N_max exceeds the token bucket's
	// capacity, so it could never be admitted by this key. Class
	// [portico.Incompatible] (this route cannot serve the call; one with a
	// larger bucket may), never retried; the numbers are in the wrapped
	// [*CapacityError].
	ErrOverCapacity = errors.New("ratelimit: call exceeds bucket capacity")
	// ErrBadRequest: the call cannot be priced (negative MaxOutputTokens, no
	// MaxOutputTokens under [RequireMaxTokens], a negative estimate). Class
	// [portico.Permanent].
	ErrBadRequest = errors.New("ratelimit: bad request")
)

// CapacityError reports a call too large for the token bucket: its reserve
// Input + MaxOutput tokens exceeds Capacity, the bucket's burst b (such a
// call can never enter, so it is rejected at once). A [Limiter] returns
// it wrapped in a [*portico.Error] of class [portico.Incompatible] whose
// Model is the request's Model (the model of the default key, and the whole
// of a [ByModel] key), so the message names the route that refused.
// errors.Is(err, ErrOverCapacity) holds for it.
type CapacityError struct {
	Input     int // N_in, estimated input tokens
	MaxOutput int // N_max, the output tokens reserved
	Capacity  int // b, the token bucket's capacity
}

// Error says "ratelimit: call needs N tokens (I input + M max output), more
// than the token bucket's capacity of B".
func (e *CapacityError) Error() string {
	return "ratelimit: call needs " + strconv.FormatUint(uint64(e.Input)+uint64(e.MaxOutput), 10) + " tokens (" +
		strconv.Itoa(e.Input) + " input + " + strconv.Itoa(e.MaxOutput) +
		" max output), more than the token bucket's capacity of " + strconv.Itoa(e.Capacity)
}

// Is reports whether target is [ErrOverCapacity].
func (e *CapacityError) Is(target error) bool { return target == ErrOverCapacity }

// overCapacity returns the error for a call of in + maxOut tokens refused by
// a token bucket of the given capacity: Incompatible, since another route
// with a larger bucket can serve the call (Permanent would say it fails
// anywhere, and stop a fallback group), naming model and l's
// Config.RefusedBy, and wrapping the *CapacityError, with no Reason, since
// the CapacityError's text says it all ("portico: incompatible by
// route_limit model m: ratelimit: call needs ...").
func (l *Limiter) overCapacity(model string, in, maxOut, capacity int) error {
	return &portico.Error{Class: portico.Incompatible, RefusedBy: l.cfg.RefusedBy, Model: model, NotSent: true,
		Err: &CapacityError{Input: in, MaxOutput: maxOut, Capacity: capacity}}
}
