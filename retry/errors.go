package retry

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
)

// history is the cause of a call's final error. Its message is a summary of
// the call ("retry: 3 attempts failed") and the last attempt's error, each said
// once: when the final error repeats the last attempt's class and fields
// (tail), only the rest of the last error follows the summary. Unwrap returns
// the Retrier's sentinel (when there is one), the last attempt's error and
// the earlier attempts' errors, so errors.Is and errors.As reach every one.
type history struct {
	summary string
	tail    bool    // the final error says the last attempt's class and fields
	errs    []error // sentinel if any, last, then the earlier attempts' errors, oldest first
	last    int     // index of the last attempt's error in errs
}

func (h *history) Error() string {
	last := h.errs[h.last]
	if pe, ok := last.(*portico.Error); ok && h.tail {
		return joinMsg(h.summary, rest(pe))
	}
	return joinMsg(h.summary, strings.TrimPrefix(last.Error(), "portico: "))
}

func (h *history) Unwrap() []error { return h.errs }

// rest returns what e's message says after its class and fields: its Reason
// and its cause, joined by ": ".
func rest(e *portico.Error) string {
	var cause string
	if e.Err != nil {
		cause = strings.TrimPrefix(e.Err.Error(), "portico: ")
	}
	return joinMsg(e.Reason, cause)
}

// joinMsg joins the non-empty of a and b with ": ".
func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ": " + b
}

// attempts returns "1 attempt" or "n attempts".
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// surface returns the error that ends a call after the attempt error last:
// the fields of [finalFields], with class cls and no RefusedBy when cls is
// neither OK nor theirs, no Reason, as Usage what every attempt billed (see
// billed), NotSent only when no attempt was sent (see noneSent), and as Err
// a history: summary, then last's message, wrapping sentinel (nil: none),
// last and the earlier attempts' errors. The message reads
// "portico: <class and fields>: <summary>: <last error>", where the last
// error's class and fields are left out when they are the final error's own.
func surface(last error, cls portico.Class, sentinel error, summary string, earlier []error) *portico.Error {
	w, direct := finalFields(last, earlier)
	if cls != portico.OK && cls != w.Class {
		// Another class: last's refusal, if it was one, did not end the call.
		w.Class, w.RefusedBy, direct = cls, portico.NotRefused, false
	}
	w.Reason = ""
	w.Usage = billed(last, earlier)
	w.NotSent = noneSent(last, earlier)
	errs := make([]error, 0, 2+len(earlier))
	if sentinel != nil {
		errs = append(errs, sentinel)
	}
	errs = append(append(errs, last), earlier...)
	w.Err = &history{summary: summary, tail: direct, errs: errs, last: len(errs) - len(earlier) - 1}
	return &w
}

// finalFields returns the class and fields of last's *portico.Error (its
// class alone when it has none), and whether last itself, not a wrapper,
// gave them. When last sent nothing ([portico.NothingSent]: a throttle's or
// a limiter's refusal) but an earlier attempt was sent, the class, Status
// and Code are the last sent attempt's: the request may have been billed,
// and last says why the call stopped. Permanent and Canceled, which end the
// request wherever it goes, stay last's.
func finalFields(last error, earlier []error) (w portico.Error, direct bool) {
	w, direct = fieldsOf(last)
	var pe *portico.Error
	if sent := lastSent(last, earlier); sent != last && sent != nil && w.Class != portico.Permanent && w.Class != portico.Canceled {
		w.Class, w.Status, w.Code, direct = portico.ClassOf(sent), 0, "", false
		if errors.As(sent, &pe) {
			w.Status, w.Code = pe.Status, pe.Code
		}
	}
	return w, direct
}

// fieldsOf returns the class and fields of err's *portico.Error (its class
// alone when it has none), and whether err itself, not a wrapper, gave
// them.
func fieldsOf(err error) (w portico.Error, direct bool) {
	var pe *portico.Error
	if !errors.As(err, &pe) {
		return portico.Error{Class: portico.ClassOf(err)}, false
	}
	return *pe, err == error(pe)
}

// lastSent returns the error of the last attempt that may have been sent,
// last or one of earlier, or nil when none was ([portico.NothingSent]).
func lastSent(last error, earlier []error) error {
	if !portico.NothingSent(last) {
		return last
	}
	for i := len(earlier) - 1; i >= 0; i-- {
		if !portico.NothingSent(earlier[i]) {
			return earlier[i]
		}
	}
	return nil
}

// noTimeLeft is the Deadline error for an attempt that does not fit; wait is the
// backoff or hint that did not fit (0 when the attempt itself does not).
func noTimeLeft(last error, wait time.Duration, earlier []error) error {
	if last == nil { // before the first attempt: nothing was sent
		return &portico.Error{Class: portico.Deadline, NotSent: true, Err: ErrNoTimeLeft}
	}
	e := surface(last, portico.Deadline, ErrNoTimeLeft, "retry: no time left after "+attempts(len(earlier)+1), earlier)
	e.RetryAfter = wait
	return e
}

// timedOut is the cause of a timed-out attempt's error: the timeout's
// sentinel, how long it was, and what the inner model returned, if anything.
// Its message names the timeout that fired and its duration, then the inner
// error only when it says more than that the context ended.
type timedOut struct {
	sentinel, inner error
	after           time.Duration
}

func (t *timedOut) Error() string {
	msg := t.sentinel.Error() + " (" + portico.RoundDuration(t.after).String() + ")"
	if t.innerSaysMore() {
		msg += ": " + strings.TrimPrefix(t.inner.Error(), "portico: ")
	}
	return msg
}

// innerSaysMore reports whether the inner error says more than that the
// timeout fired or the context ended.
func (t *timedOut) innerSaysMore() bool {
	i := t.inner
	return i != nil && !errors.Is(i, t.sentinel) && !errors.Is(i, context.Canceled) && !errors.Is(i, context.DeadlineExceeded)
}

func (t *timedOut) Unwrap() []error {
	if t.inner == nil {
		return []error{t.sentinel}
	}
	return []error{t.sentinel, t.inner}
}

// timeoutError classifies the failure of an attempt the Retrier abandoned
// after the timeout d, wrapping the timeout's sentinel and inner, what the
// inner model returned, and keeping inner's Model. The class is Transient when
// inner is: the inner layer knows the request was never sent (the openai
// adapter says so of a dial that hangs), so trying again is safe. Otherwise
// it is Ambiguous: inner says the request was sent (Ambiguous), or does not
// say (a bare context error, Deadline, Canceled, or no error at all), and the
// outcome is unknown.
func timeoutError(sentinel error, d time.Duration, inner error) error {
	e := &portico.Error{Class: portico.Ambiguous, Err: &timedOut{sentinel: sentinel, inner: inner, after: d}}
	if portico.ClassOf(inner) == portico.Transient {
		e.Class = portico.Transient
	}
	var pe *portico.Error
	if errors.As(inner, &pe) {
		e.Model = pe.Model
	}
	return e
}

// canceledDuring returns the error for a caller's context that ended while a
// retry was pending, keeping every attempt's error as a cause and, as
// Usage, what every attempt billed (see billed).
func canceledDuring(ctxErr, last error, earlier []error) error {
	var pe *portico.Error
	if errors.As(ctxErr, &pe) {
		w := *pe
		w.Err = portico.Join(append([]error{pe.Err, last}, earlier...)...)
		if u := billed(last, earlier); u != nil {
			w.Usage = u
		}
		w.NotSent = noneSent(last, earlier)
		return &w
	}
	return ctxErr
}

// noneSent reports whether every attempt's error, last and earlier, says
// that its request was never sent ([portico.NothingSent]). The final error
// says NotSent only then, since one sent attempt may have been counted or
// billed.
func noneSent(last error, earlier []error) bool { return lastSent(last, earlier) == nil }

// billed returns the usage the provider billed over a call's failed attempts,
// whose errors are last and earlier: the sum, field by field (input, output,
// cached input tokens), of each attempt's billed usage, the Usage of the first
// [*portico.Error] in its tree that carries one. An attempt without one adds
// nothing. It returns nil when no attempt billed, and the one attempt's own
// *Usage when only one did; summing is valid because every attempt went to
// the same route at the same prices. Fallback's Response.Cost and
// ratelimit's refunds read the final error's Usage, so without the sum they
// would miss all but the last attempt's bill.
func billed(last error, earlier []error) *portico.Usage {
	var one *portico.Usage
	var sum portico.Usage
	n := 0
	for _, e := range slices.Concat([]error{last}, earlier) {
		if u := portico.UsageOf(e); u != nil {
			if n == 0 {
				one = u
			}
			sum = sum.Add(*u)
			n++
		}
	}
	if n <= 1 {
		return one
	}
	return &sum
}

// attemptSeq numbers attempt ids within the process.
var attemptSeq atomic.Uint64

// attemptID returns a process-unique attempt id such as "a-1k".
func attemptID() string {
	return "a-" + strconv.FormatUint(attemptSeq.Add(1), 36)
}
