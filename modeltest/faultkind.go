package modeltest

import "strconv"

// FaultKind names a fault that [Faults] injects. The zero FaultKind, FaultNone,
// is a call passed through untouched.
type FaultKind uint8

// The faults [Faults] injects: what a provider does under load and failure.
// "Inner not called" means the wrapped Model never sees
// the call, as when a provider refuses before doing any work.
const (
	// FaultNone passes the call through to the wrapped Model.
	FaultNone FaultKind = iota
	// Fault429 returns [RateLimitError] with FaultConfig.RetryAfter; inner not called.
	Fault429
	// Fault500 returns [StatusError](500); inner not called.
	Fault500
	// Fault502 returns [StatusError](502); inner not called.
	Fault502
	// Fault503 returns [StatusError](503); inner not called.
	Fault503
	// FaultConnRefused returns [ConnRefusedError], a connection error before the
	// request was sent ([portico.Transient]); inner not called.
	FaultConnRefused
	// FaultTimeout calls the inner Model (the request was sent and executed,
	// without streaming to the caller), discards its result, waits
	// FaultConfig.Timeout and returns [ErrTimeout] ([portico.Ambiguous]).
	FaultTimeout
	// FaultSlowTTFT waits FaultConfig.SlowTTFT, then calls the inner Model, so the
	// first token (and the answer) come that much later.
	FaultSlowTTFT
	// FaultStall lets FaultConfig.StallAfter chunks through and then blocks until
	// ctx is done, returning [portico.FromContext]'s error; a non-streaming call
	// blocks without calling the inner Model.
	FaultStall
	// FaultInvalidJSON answers with the inner Model's Response whose Text is
	// replaced by [BrokenJSON] (an HTTP 200 with a malformed body).
	FaultInvalidJSON
	// FaultTruncation answers with the inner Model's Response cut to the first
	// half of its Text (at a UTF-8 boundary) and FinishReason
	// [portico.FinishLength].
	FaultTruncation
	// FaultContextOverflow returns [ContextOverflowError] ([portico.Incompatible],
	// code "context_length_exceeded"); inner not called.
	FaultContextOverflow

	numFaultKinds
)

var faultNames = [...]string{
	FaultNone:            "none",
	Fault429:             "429",
	Fault500:             "500",
	Fault502:             "502",
	Fault503:             "503",
	FaultConnRefused:     "conn_refused",
	FaultTimeout:         "timeout",
	FaultSlowTTFT:        "slow_ttft",
	FaultStall:           "stall",
	FaultInvalidJSON:     "invalid_json",
	FaultTruncation:      "truncation",
	FaultContextOverflow: "context_overflow",
}

// String returns the kind's short name: "none", "429", "500", "502", "503",
// "conn_refused", "timeout", "slow_ttft", "stall", "invalid_json", "truncation"
// or "context_overflow".
func (k FaultKind) String() string {
	if k < numFaultKinds {
		return faultNames[k]
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// FaultKinds returns every FaultKind that [Faults] can inject, in order, without
// FaultNone.
func FaultKinds() []FaultKind {
	out := make([]FaultKind, 0, numFaultKinds-1)
	for k := FaultNone + 1; k < numFaultKinds; k++ {
		out = append(out, k)
	}
	return out
}
