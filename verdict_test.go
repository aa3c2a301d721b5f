package portico

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// TestFaultOf is the one table of whose fault an outcome is; each layer's
// own tests pin its column of FaultOf's doc.
func TestFaultOf(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	late, lcancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer lcancel()
	timeout := NewLayerTimeout("share timeout")
	refused := fmt.Errorf("schema: %w", ErrAnswerRefused)
	tests := []struct {
		name  string
		err   error
		fault Fault
		class Class
	}{
		{"success", nil, FaultNone, OK},
		{"transient", &Error{Class: Transient, Status: 503}, FaultRoute, Transient},
		{"rate limited", &Error{Class: RateLimited, Status: 429}, FaultRoute, RateLimited},
		{"ambiguous", &Error{Class: Ambiguous}, FaultRoute, Ambiguous},
		{"invalid response", &Error{Class: InvalidResponse}, FaultRoute, InvalidResponse},
		{"nil response", ErrNilResponse, FaultRoute, InvalidResponse},
		{"unusable", &Error{Class: Unusable, Status: 401}, FaultRoute, Unusable},
		{"layer timeout", &Error{Class: Ambiguous, Err: timeout}, FaultRoute, Ambiguous},
		{"wrapped route fault", fmt.Errorf("call: %w", &Error{Class: Transient}), FaultRoute, Transient},
		{"permanent", &Error{Class: Permanent}, FaultRequest, Permanent},
		{"nil request", ErrNilRequest, FaultRequest, Permanent},
		{"incompatible", &Error{Class: Incompatible, Status: 400}, FaultRequest, Incompatible},
		{"unclassified", io.EOF, FaultRequest, Permanent},
		{"refused answer", &Error{Class: InvalidResponse, Err: refused}, FaultRequest, InvalidResponse},
		{"refused answer incompatible", &Error{Class: Incompatible, Err: refused}, FaultRequest, Incompatible},
		{"canceled", &Error{Class: Canceled}, FaultCaller, Canceled},
		{"bare canceled", context.Canceled, FaultCaller, Canceled},
		{"deadline", &Error{Class: Deadline}, FaultCaller, Deadline},
		{"bare deadline", context.DeadlineExceeded, FaultCaller, Deadline},
		{"gone canceled", Gone(canceled), FaultCaller, Canceled},
		{"gone deadline", Gone(late), FaultCaller, Deadline},
		{"deadline cut sent", &Error{Class: Ambiguous, Err: DeadlineCut(timeout)}, FaultCaller, Ambiguous},
		{"deadline cut not sent", &Error{Class: Transient, Err: DeadlineCut(timeout)}, FaultCaller, Transient},
		{"deadline cut of a foreign class", &Error{Class: InvalidResponse, Err: DeadlineCut(timeout)}, FaultRoute, InvalidResponse},
		{"unanswered cut", &Error{Class: Ambiguous, Err: Unanswered(timeout)}, FaultUnanswered, Ambiguous},
		{"unanswered cut not sent", &Error{Class: Transient, Err: Unanswered(timeout)}, FaultUnanswered, Transient},
		{"unanswered refusal", &Error{Class: Incompatible, Status: 503, Err: UnansweredRefusal(io.EOF)}, FaultUnanswered, Incompatible},
		{"unanswered of a foreign class", &Error{Class: Permanent, Err: ErrUnanswered}, FaultRequest, Permanent},
		{"rejected", &Error{Class: Rejected, RefusedBy: CircuitBreaker, NotSent: true}, FaultLocal, Rejected},
		{"class ok", &Error{Class: OK}, FaultLocal, OK},
		{"joined: the first *Error", errors.Join(&Error{Class: Rejected}, &Error{Class: Transient}), FaultLocal, Rejected},
	}
	for _, tt := range tests {
		if f, c := FaultOf(tt.err); f != tt.fault || c != tt.class {
			t.Errorf("%s: FaultOf(%v) = %v, %v, want %v, %v", tt.name, tt.err, f, c, tt.fault, tt.class)
		}
	}
}

func TestFaultString(t *testing.T) {
	for f, want := range map[Fault]string{FaultNone: "none", FaultRoute: "route", FaultLocal: "local", 9: "Fault(9)"} {
		if got := f.String(); got != want {
			t.Errorf("Fault(%d).String() = %q, want %q", f, got, want)
		}
	}
}

func ExampleFaultOf() {
	for _, err := range []error{
		nil,
		&Error{Class: RateLimited, Status: 429},
		&Error{Class: Incompatible, Status: 400},
		&Error{Class: Ambiguous, Err: Unanswered(NewLayerTimeout("share"))},
		context.Canceled,
		&Error{Class: Rejected, RefusedBy: CircuitBreaker},
	} {
		f, c := FaultOf(err)
		fmt.Println(f, c)
	}
	// Output:
	// none ok
	// route rate_limited
	// request incompatible
	// unanswered ambiguous
	// caller canceled
	// local rejected
}
