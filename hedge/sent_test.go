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
	"github.com/portico-llm/portico/modeltest"
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

// A hedge refused before anything was sent gives its budget token back; one
// whose refusal wraps a call that may have been sent (a retry layer's
// throttle after a sent attempt) keeps it, since it may have been billed:
// portico.NothingSent is the one rule for both.
func TestHedgeTokenRefundedOnlyWhenNothingSent(t *testing.T) {
	sent := &portico.Error{Class: portico.Ambiguous, Reason: "timeout after send"}
	for _, c := range []struct {
		name     string
		err      error
		refunded int
	}{
		{"refused, nothing sent", &portico.Error{Class: portico.Rejected, Reason: "throttled"}, 1},
		{"refused after a sent call", &portico.Error{Class: portico.Rejected, Reason: "throttled", Err: sent}, 0},
	} {
		synctest.Test(t, func(t *testing.T) {
			b := &modeltest.Budget{Tokens: -1}
			m := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
				if r.Hedge {
					return nil, c.err
				}
				time.Sleep(time.Second)
				return &portico.Response{Text: "first"}, nil
			})
			resp, err := hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: b}).Wrap(m).Generate(context.Background(), req)
			if err != nil || resp.Text != "first" {
				t.Fatalf("%s: Generate = %v, %v, want the first attempt's answer", c.name, resp, err)
			}
			if tk, rf := len(b.Taken()), b.Refunded(); tk != 1 || rf != c.refunded {
				t.Errorf("%s: budget: %d taken, %d refunded; want 1 and %d", c.name, tk, rf, c.refunded)
			}
		})
	}
}
