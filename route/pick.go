package route

import (
	"time"

	"github.com/portico-llm/portico"
)

// PickInfo is what a picker ([Router.Pick], [Balancer.Pick], a [Picker]) is told
// about one call. It is a struct so that fields can be added without breaking
// pickers (grpc-go's balancer.PickInfo is the model).
type PickInfo struct {
	// Request is the call to place; pickers read it and never modify it.
	Request *portico.Request
	// InputTokens is the estimated N_in of Request, in tokens; 0 lets the caller
	// of the picker fill it from its Estimator.
	InputTokens int
	// Now is the time of the pick; the zero Time means now, on the monotonic
	// clock, read only by pickers that need a clock (the prefix-aware one).
	// Simulations pass virtual time here.
	Now time.Time
}

// PickResult is a picker's answer: which candidate, and how to report back.
type PickResult struct {
	// Index is the position of the chosen route or replica in the picker's list.
	Index int
	// Done, when non-nil, must be called exactly once when the call placed on
	// Index ends, with what was observed. Pickers use it to update in-flight
	// counts, latency EWMAs and error rates. It never blocks.
	Done func(DoneInfo)
}

// DoneInfo is the feedback passed to [PickResult.Done] when a call ends.
type DoneInfo struct {
	// Err is the call's error, nil on success.
	Err error
	// Latency is the call's duration from pick to end.
	Latency time.Duration
	// TTFT is the time from pick to the first streamed chunk; 0 when the call did
	// not stream or nothing arrived.
	TTFT time.Duration
	// Usage is the answer's token usage; zero on error.
	Usage portico.Usage
}
