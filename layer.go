package portico

import "context"

// Unstarted returns the error of a call that a layer does not start, before
// it spends or sends anything for it: [ErrNilRequest] for a nil req, else
// [Gone]'s error once ctx is done; nil for a call that may start.
func Unstarted(ctx context.Context, req *Request) error {
	if req == nil {
		return ErrNilRequest
	}
	return Gone(ctx)
}

// Must returns v, and panics with err when err is not nil: each layer's
// MustNew is Must(New(cfg)), for package-level stacks and examples.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// PanicIfNil panics with msg when m is nil ([IsNil]): a layer's Wrap of a
// nil Model is a programming error, caught where it is made.
func PanicIfNil(m Model, msg string) {
	if IsNil(m) {
		panic(msg)
	}
}
