package fakecore

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// FaultKind names a fault the server injects.
type FaultKind uint8

// The faults. Each dialect documents how it renders them on its wire.
const (
	NoFault FaultKind = iota
	FaultStatus
	FaultContextLength
	FaultStallBeforeHeaders
	FaultStallMidStream
	FaultMalformed
	FaultStreamError
	FaultTruncate
	FaultDisconnect
)

var faultNames = [...]string{
	NoFault:                 "none",
	FaultStatus:             "status",
	FaultContextLength:      "context_length",
	FaultStallBeforeHeaders: "stall_before_headers",
	FaultStallMidStream:     "stall_mid_stream",
	FaultMalformed:          "malformed",
	FaultStreamError:        "stream_error",
	FaultTruncate:           "truncate",
	FaultDisconnect:         "disconnect",
}

// String returns the fault's snake_case name ("stall_mid_stream").
func (k FaultKind) String() string {
	if int(k) < len(faultNames) {
		return faultNames[k]
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// Fault is what happens to one request: drawn for a fraction of a model's
// requests (Model.Faults), or played in order (Model.Script). The zero Fault
// is a normal answer.
type Fault struct {
	// Kind says what fails.
	Kind FaultKind
	// Fraction is the share of requests that get this fault, in [0, 1]. A
	// script step ignores it.
	Fraction float64
	// Status is the HTTP status of FaultStatus. Zero means 500. A status
	// below 400 (a 200 whose body is not an answer) needs a Body.
	Status int
	// Code is the error's code field. Empty means the dialect's usual code for
	// the status.
	Code string
	// Type is the error's type field. Empty means the dialect's usual type.
	Type string
	// Message is the error's message. Empty means a fixed description. Tests
	// put prompt-like text here to check that adapters keep it out of their
	// error strings.
	Message string
	// RetryAfter, when positive, is sent as a retry-after header in whole
	// seconds (rounded up), or as an HTTP-date when RetryAfterDate is set.
	RetryAfter time.Duration
	// RetryAfterDate sends RetryAfter as an HTTP-date (RFC 9110) instead of
	// seconds.
	RetryAfterDate bool
	// RetryAfterMsHeader, when positive, is sent as a retry-after-ms header in
	// milliseconds.
	RetryAfterMsHeader time.Duration
	// ShouldRetry, when non-empty, is sent as the x-should-retry header.
	ShouldRetry string
	// Header is set on the response after the headers above, so it replaces
	// them: any retry-after value, malformed ones included, or a
	// Content-Type for Body. Nil means none.
	Header http.Header
	// Body, when non-empty, is sent verbatim instead of the dialect's own
	// body: the whole body of FaultStatus (Content-Type application/json
	// unless Header sets one), or the data of FaultStreamError's event.
	Body string
	// Event names FaultStreamError's event ("event: error"); empty sends a
	// data-only event, as OpenAI-compatible servers do.
	Event string
	// AfterChunks is how many content chunks (tokens) are sent before a
	// mid-stream fault strikes. Zero means at once, before any content.
	AfterChunks int
	// Stall is how long a stall lasts. Zero means until the client goes away or
	// the server closes.
	Stall time.Duration
}

// check reports what is wrong with f as a step (script true) or a drawn fault.
func (f *Fault) check(script bool) error {
	switch {
	case !script && (f.Fraction < 0 || f.Fraction > 1 || f.Fraction != f.Fraction):
		return errors.New("fault fraction outside [0, 1]")
	case f.Kind == FaultStatus && f.Status != 0 && (f.Status < 200 || f.Status > 599):
		return errors.New("fault status " + strconv.Itoa(f.Status) + " is not an HTTP status (200-599)")
	case f.Kind == FaultStatus && f.Status != 0 && f.Status < 400 && f.Body == "":
		return errors.New("fault status " + strconv.Itoa(f.Status) + " below 400 without a Body")
	case f.AfterChunks < 0:
		return errors.New("negative fault AfterChunks")
	case f.Stall < 0:
		return errors.New("negative fault Stall")
	}
	return nil
}
