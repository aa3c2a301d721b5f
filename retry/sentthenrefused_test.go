package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// errThrottled stands for a refusal below the Retrier (a throttle, a
// per-attempt limiter) of an attempt it never sent.
var errThrottled = errors.New("throttled")

// TestSentThenRefused: when an attempt was sent and the next one is refused
// below the Retrier without being sent, the final error says what may have
// happened to the request: not NotSent, the sent attempt's class and
// status, both errors reachable. A refusal of the first attempt, or of
// every attempt, stays NotSent and Rejected.
func TestSentThenRefused(t *testing.T) {
	refused := &portico.Error{Class: portico.Rejected, Reason: "throttled", NotSent: true, Err: errThrottled}
	ambiguous := &portico.Error{Class: portico.Ambiguous, Reason: "timeout after send"}
	unsent := &portico.Error{Class: portico.Transient, Reason: "connection refused", NotSent: true}
	s503 := transient()
	permanent := &portico.Error{Class: portico.Permanent, Reason: "not encodable", NotSent: true}
	// limited is a limiter's refusal whose wait is beyond Backoff.MaxRetryAfter.
	limited := &portico.Error{Class: portico.RateLimited, RetryAfter: time.Hour, NotSent: true, Err: errThrottled}
	tests := []struct {
		name        string
		errs        []error // attempt n fails with errs[n], the last repeating
		calls       int
		class       portico.Class
		status      int
		notSent     bool
		nothingSent bool // portico.NothingSent of the final error
		reach       []error
	}{
		{"sent (ambiguous), then refused", []error{ambiguous, refused}, 2, portico.Ambiguous, 0, false, false,
			[]error{ambiguous, refused, errThrottled, portico.ErrRejected, portico.ErrAmbiguous}},
		{"sent (503), then refused", []error{s503, refused}, 2, portico.Transient, 503, false, false,
			[]error{s503, refused, errThrottled}},
		{"sent, unsent, then refused", []error{s503, unsent, refused}, 3, portico.Transient, 503, false, false,
			[]error{s503, unsent, refused}},
		{"refused at once", []error{refused}, 1, portico.Rejected, 0, true, true, []error{refused, errThrottled}},
		{"unsent, then refused", []error{unsent, refused}, 2, portico.Rejected, 0, true, true, []error{unsent, refused}},
		// The Retrier's own reason to stop (the limiter's wait is too long)
		// keeps its class, and the sent attempt it wraps says it was sent.
		// Permanent ends the request wherever it goes: it stays the class.
		{"sent, then permanent unsent", []error{ambiguous, permanent}, 2, portico.Permanent, 0, false, false,
			[]error{ambiguous, permanent}},
		{"sent, then a wait too long", []error{ambiguous, limited}, 2, portico.RateLimited, 0, false, false,
			[]error{ambiguous, limited, ErrRetryAfterTooLong}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
					return nil, tt.errs[min(n, len(tt.errs)-1)]
				}}
				_, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}}).Wrap(base).Generate(t.Context(), userReq)
				if got := base.calls(); got != tt.calls {
					t.Errorf("calls = %d, want %d", got, tt.calls)
				}
				var pe *portico.Error
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want a *portico.Error", err)
				}
				if pe.Class != tt.class || pe.Status != tt.status || pe.NotSent != tt.notSent {
					t.Errorf("err = %v: class %v status %d NotSent %v, want %v %d %v", err, pe.Class, pe.Status, pe.NotSent, tt.class, tt.status, tt.notSent)
				}
				if got := portico.NothingSent(err); got != tt.nothingSent {
					t.Errorf("NothingSent(%v) = %v, want %v", err, got, tt.nothingSent)
				}
				for _, target := range tt.reach {
					if !errors.Is(err, target) {
						t.Errorf("errors.Is(%v, %v) = false, want true", err, target)
					}
				}
			})
		})
	}
}
