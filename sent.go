package portico

import (
	"errors"
	"slices"
)

// NothingSent reports whether err says that its call sent nothing, so
// that no provider can have counted or billed it: the rule a limiter's
// refund, a hedge's budget token, trace's attempt count and every layer
// wrapping several calls read. The first [*Error] in err's tree decides:
// NotSent set, or class [Rejected] (refused locally) unless an *Error in
// its tree says its call may have been sent, as a layer wrapping several
// calls keeps them (see [Error.NotSent]). Anything else may have been
// sent, and so may an error without an *Error; nil is false.
func NothingSent(err error) bool {
	e := first(err)
	return e != nil && !e.sent()
}

// sent reports whether e's call may have been sent (see NothingSent).
func (e *Error) sent() bool {
	switch {
	case e.NotSent:
		return false
	case e.Class == Rejected:
		return SentIn(e.Err) // a refusal, unless it wraps a call that was sent
	}
	return true
}

// SentIn reports whether an [*Error] in err's tree (err included) says its
// call may have been sent (see [NothingSent]); each *Error found speaks for
// its own tree. A layer wrapping several calls keeps each call's error in
// its tree, so this tells whether any of them was sent.
func SentIn(err error) bool {
	for err != nil {
		switch x := err.(type) {
		case *Error:
			return x.sent()
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			return slices.ContainsFunc(x.Unwrap(), SentIn)
		default:
			return false
		}
	}
	return false
}

// AfterSent returns the error of a layer that made several calls and ends
// with err after sent, the error of the last of them that may have been
// sent (nil: none was). It is err itself unless err says nothing was sent
// ([NothingSent]) while sent is not nil. Then the request may have been
// billed: it is an *Error with sent's class and fields (err's RetryAfter
// when err has one, as the latest), NotSent false, whose cause joins sent
// and err, so that errors.Is and errors.As reach both and err says why the
// layer stopped (RefusedBy is err's). Permanent and Canceled, which end a
// request wherever it goes, keep err's class and fields.
func AfterSent(err, sent error) error {
	if sent == nil || !NothingSent(err) {
		return err
	}
	from := sent
	if c := ClassOf(err); c == Permanent || c == Canceled {
		from = err
	}
	w := &Error{Class: ClassOf(from)}
	var pe *Error
	if errors.As(from, &pe) {
		*w = *pe
	}
	w.Reason, w.NotSent, w.RefusedBy = "", false, RefuserOf(err)
	if d := RetryAfterOf(err); d > 0 {
		w.RetryAfter = d
	}
	w.Err = Join(sent, err)
	return w
}
