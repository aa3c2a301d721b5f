package retry

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// causes is an error with several causes: Error joins their messages with ": "
// and Unwrap returns them all, so errors.Is and errors.As reach each.
type causes []error

func (c causes) Error() string {
	var b strings.Builder
	for i, e := range c {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

func (c causes) Unwrap() []error { return c }

// surface returns the error that ends a call after the attempt error last: a
// *portico.Error with last's class and fields (Status, Code, Model, RetryAfter,
// RateLimit), or class cls when cls is not None, whose Err holds sentinel, last
// and the earlier attempts' errors (oldest first, after last).
func surface(last error, cls portico.Class, sentinel error, reason string, earlier []error) *portico.Error {
	var w portico.Error
	var pe *portico.Error
	if errors.As(last, &pe) {
		w = *pe
	} else {
		w.Class = portico.ClassOf(last)
	}
	if cls != portico.None {
		w.Class = cls
	}
	w.Reason = reason
	c := make(causes, 0, 2+len(earlier))
	c = append(c, sentinel, last)
	c = append(c, earlier...)
	w.Err = c
	return &w
}

// noTimeLeft is the Deadline error for an attempt that does not fit; wait is the
// backoff or hint that did not fit (0 when the attempt itself does not).
func noTimeLeft(last error, wait time.Duration, earlier []error) error {
	if last == nil {
		return &portico.Error{Class: portico.Deadline, Reason: "no time left for an attempt", Err: ErrNoTimeLeft}
	}
	e := surface(last, portico.Deadline, ErrNoTimeLeft, "no time left for an attempt", earlier)
	e.RetryAfter = wait
	return e
}

// timeoutError classifies the failure of an attempt the Retrier abandoned,
// wrapping the timeout's sentinel and inner, what the inner model returned.
// The class is Transient when inner is: the inner layer knows the request was
// never sent (the openai adapter says so of a dial that hangs), so trying
// again is safe. Otherwise it is Ambiguous: inner says the request was sent
// (Ambiguous), or does not say (a bare context error, Deadline, Canceled, or
// no error at all), and the outcome is unknown.
func timeoutError(sentinel, inner error) error {
	class := portico.Ambiguous
	if portico.ClassOf(inner) == portico.Transient {
		class = portico.Transient
	}
	reason := "attempt timeout"
	switch sentinel {
	case ErrFirstChunkTimeout:
		reason = "first chunk timeout"
	case ErrChunkGapTimeout:
		reason = "chunk gap timeout"
	}
	c := causes{sentinel}
	if inner != nil {
		c = append(c, inner)
	}
	return &portico.Error{Class: class, Reason: reason, Err: c}
}

// canceledDuring returns the error for a caller's context that ended while a
// retry was pending, keeping the last attempt's error as a cause.
func canceledDuring(ctxErr, last error) error {
	var pe *portico.Error
	if errors.As(ctxErr, &pe) {
		w := *pe
		w.Err = causes{pe.Err, last}
		return &w
	}
	return ctxErr
}

// attemptSeq numbers attempt ids within the process.
var attemptSeq atomic.Uint64

// attemptID returns a process-unique attempt id such as "a-1k".
func attemptID() string {
	return "a-" + strconv.FormatUint(attemptSeq.Add(1), 36)
}
