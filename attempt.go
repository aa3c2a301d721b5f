package portico

import "context"

// Attempt identifies one attempt of a call, as seen by the layers inside a retry
// layer: which try this is and a unique id for it, beside the operation id
// (Identity.OperationID), so that logs and spans tell a retry from new
// traffic.
type Attempt struct {
	// Index is 0 for the first attempt, 1 for the first retry, and so on.
	Index int
	// ID is unique per attempt within the process; empty for a first attempt that
	// no retry layer annotated.
	ID string
}

type attemptKey struct{}

// ContextWithAttempt returns a copy of ctx that carries a. Retry layers call it
// for each attempt after the first; the first attempt's context is left as it was
// so that the happy path does not allocate.
func ContextWithAttempt(ctx context.Context, a Attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

// AttemptFromContext returns the Attempt ctx carries, or the zero Attempt (index
// 0, no id) when it carries none: a first attempt, or a call with no retry layer
// outside it.
func AttemptFromContext(ctx context.Context) Attempt {
	a, _ := ctx.Value(attemptKey{}).(Attempt)
	return a
}
