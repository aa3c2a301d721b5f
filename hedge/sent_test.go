package hedge_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
)

// A race whose sent attempt failed, or was canceled, before a hedge refused
// without sending ended it does not say NotSent, and keeps both errors: a
// limiter above must not refund a call that may have been billed.
func TestRaceAfterSentIsNotNotSent(t *testing.T) {
	ambiguous := &portico.Error{Class: portico.Ambiguous, Reason: "timeout after send"}
	refused := &portico.Error{Class: portico.Rejected, Reason: "throttled", NotSent: true}
	noTime := &portico.Error{Class: portico.Deadline, Reason: "no time", NotSent: true}
	canceledSent := &portico.Error{Class: portico.Canceled, Reason: "canceled after send"}
	tests := []struct {
		name  string
		first func(ctx context.Context) error // attempt 0, sent; the hedge starts at 1 s
		hedge error                           // the hedge's refusal, after 3 s (refused) or at once
		after time.Duration
		class portico.Class
		reach []error
	}{
		// Attempt 0 fails at 2 s; the hedge is refused at 4 s, last.
		{"sent and failed, then the hedge refused", func(context.Context) error { time.Sleep(time.Second); return ambiguous },
			refused, 3 * time.Second, portico.Ambiguous, []error{ambiguous, refused}},
		// The hedge's Deadline stops the race and cancels attempt 0.
		{"hedge stops the race, the sent attempt canceled", func(ctx context.Context) error { <-ctx.Done(); return canceledSent },
			noTime, 0, portico.Deadline, []error{canceledSent, noTime}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				m := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
					n.Add(1)
					if !r.Hedge {
						time.Sleep(time.Second)
						return nil, tt.first(ctx)
					}
					time.Sleep(tt.after)
					return nil, tt.hedge
				})
				_, err := hedge.MustNew(hedge.Config{Delay: time.Second}).Wrap(m).Generate(t.Context(), req)
				if got := n.Load(); got != 2 {
					t.Fatalf("calls = %d, want 2", got)
				}
				var pe *portico.Error
				if !errors.As(err, &pe) || pe.Class != tt.class || pe.NotSent || portico.NothingSent(err) {
					t.Errorf("err = %v (NotSent %v), want class %v, not NotSent", err, pe != nil && pe.NotSent, tt.class)
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
