package guard

import (
	"errors"
	"strconv"
)

// ErrRefused is wrapped by the error of every request a guardrail refused
// (errors.Is); the [*Refusal] in its tree (errors.As) says which.
var ErrRefused = errors.New("guard: request refused")

// ErrCheckFailed is wrapped by the error of every request refused because
// a fail-closed guardrail's check failed; the [*CheckError] says which.
var ErrCheckFailed = errors.New("guard: check failed")

// Refusal is a guardrail's refusal of a request. A Check returns one
// made by [Deny]; the call's error (a [portico.Permanent]
// *portico.Error, NotSent) wraps one naming the guardrail too.
type Refusal struct {
	// Guardrail is the name of the guardrail that refused; empty in the
	// error a Check returns (Wrap fills it).
	Guardrail string
	// Rule names the rule that refused: an identifier, never the text
	// that matched.
	Rule string
}

// Deny returns the error a Check returns to refuse a request by rule, an
// identifier of the rule ("max_bytes", "deny:secret_key") that says
// nothing of the request's content.
func Deny(rule string) error { return &Refusal{Rule: rule} }

// Error says the guardrail and the rule, never the request's content.
func (r *Refusal) Error() string {
	s := "guard: refused"
	if r.Guardrail != "" {
		s += " by guardrail " + strconv.Quote(r.Guardrail)
	}
	if r.Rule != "" {
		s += " rule " + strconv.Quote(r.Rule)
	}
	return s
}

// Unwrap returns ErrRefused.
func (r *Refusal) Unwrap() error { return ErrRefused }

// CheckError is the failure of a fail-closed guardrail's check: the call's
// error (a [portico.Rejected] *portico.Error, NotSent) wraps it.
type CheckError struct {
	// Guardrail is the name of the guardrail whose check failed.
	Guardrail string
	// Kind is how it failed: "error" (it returned an error that is no
	// refusal) or "timeout" (it ran past Guardrail.Timeout).
	Kind  string
	cause error
}

// Error says the guardrail and how its check failed; it does not repeat
// the check's own error, which may quote the request.
func (e *CheckError) Error() string {
	return "guard: check of guardrail " + strconv.Quote(e.Guardrail) + " failed: " + e.Kind
}

// Unwrap returns ErrCheckFailed and the check's own error, for errors.Is
// and errors.As.
func (e *CheckError) Unwrap() []error { return []error{ErrCheckFailed, e.cause} }
