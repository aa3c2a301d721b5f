package portico

import "errors"

// NothingSent reports whether err says that its call sent nothing, so that
// no provider can have counted or billed it: the one rule that a limiter's
// refund, a hedge's budget token, trace's attempt count and every layer
// wrapping several calls read. The first [*Error] in err's tree decides:
//
//   - NotSent set: nothing was sent;
//   - class [Rejected] (refused locally), or Permanent, Incompatible,
//     Unusable, Transient or RateLimited without an HTTP status (refused
//     before sending by a layer that does not set NotSent: a refused
//     connection): nothing was sent, unless an *Error in its tree says
//     its call was sent, as a layer wrapping several calls keeps them
//     (see [Error.NotSent]);
//   - anything else may have been sent, and so may an error without an
//     *Error. nil is false.
func NothingSent(err error) bool {
	if e, ok := err.(*Error); ok && e != nil {
		return !e.sent()
	}
	var e *Error
	return errors.As(err, &e) && !e.sent()
}

// sent reports whether e's call may have been sent (see NothingSent).
func (e *Error) sent() bool {
	switch {
	case e.NotSent:
		return false
	case e.Class == Rejected:
	case e.Status == 0 && (e.Class == Permanent || e.Class == Incompatible ||
		e.Class == Unusable || e.Class == Transient || e.Class == RateLimited):
	default:
		return true
	}
	return sentIn(e.Err) // a refusal, unless it wraps a call that was sent
}

// sentIn reports whether an *Error in err's tree says its call may have
// been sent. Each *Error found speaks for its own tree.
func sentIn(err error) bool {
	for err != nil {
		switch x := err.(type) {
		case *Error:
			return x.sent()
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, c := range x.Unwrap() {
				if sentIn(c) {
					return true
				}
			}
			return false
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
// layer stopped.
func AfterSent(err, sent error) error {
	if sent == nil || !NothingSent(err) {
		return err
	}
	w := &Error{Class: ClassOf(sent)}
	var pe *Error
	if errors.As(sent, &pe) {
		*w = *pe
	}
	w.Reason, w.NotSent = "", false
	if d := RetryAfterOf(err); d > 0 {
		w.RetryAfter = d
	}
	w.Err = Join(sent, err)
	return w
}
