package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// The final error says NotSent only when no attempt's request was sent: none
// was made (no time for the first), or every attempt's error says NotSent.
// One sent attempt, whatever came after it, may have been counted or billed.
func TestFinalErrorNotSent(t *testing.T) {
	unsent := &portico.Error{Class: portico.Transient, Reason: "connection refused", NotSent: true}
	sent := transient() // a 503: the request reached the server
	// seq fails call n with errs[n] (the last one repeats), each after d.
	seq := func(d time.Duration, errs ...error) *counting {
		return &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
			time.Sleep(d)
			return nil, errs[min(n, len(errs)-1)]
		}}
	}
	now := Config{Backoff: Backoff{Schedule: Immediate}}
	notSentOf := func(err error) bool {
		var pe *portico.Error
		return errors.As(err, &pe) && pe.NotSent
	}
	tests := []struct {
		name      string
		cfg       Config
		ctx       func() (context.Context, context.CancelFunc)
		base      *counting
		wantCalls int
		want      bool
		sentinel  error
	}{
		{"no time for the first attempt", Config{Backoff: Backoff{Schedule: Immediate}, MinAttemptTime: 2 * time.Second}, deadline(time.Second),
			seq(0, sent), 0, true, ErrNoTimeLeft},
		{"every attempt unsent", now, background, seq(0, unsent), 3, true, ErrAttemptsExhausted},
		{"sent, then unsent", now, background, seq(0, sent, unsent), 3, false, ErrAttemptsExhausted},
		{"unsent, then sent", now, background, seq(0, unsent, sent), 3, false, ErrAttemptsExhausted},
		{"budget exhausted after an unsent attempt", Config{Backoff: Backoff{Schedule: Immediate}, Budget: Budget{NoRefill: true, Burst: 1, DestinationBurst: 1}},
			background, seq(0, unsent), 2, true, ErrBudgetExhausted},
		// The first attempt takes 500 ms of 1 s: less than the 600 ms an
		// attempt needs is left.
		{"no time after a sent attempt", Config{Backoff: Backoff{Schedule: Immediate}, MinAttemptTime: 600 * time.Millisecond}, deadline(time.Second),
			seq(500*time.Millisecond, sent), 1, false, ErrNoTimeLeft},
		{"canceled during the wait after an unsent attempt", Config{Backoff: Backoff{Schedule: Exponential, BaseDelay: time.Second}},
			cancelAfter(500 * time.Millisecond), seq(0, unsent), 1, true, context.Canceled},
		{"canceled during the wait after a sent attempt", Config{Backoff: Backoff{Schedule: Exponential, BaseDelay: time.Second}},
			cancelAfter(500 * time.Millisecond), seq(0, sent), 1, false, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := tt.ctx()
				defer cancel()
				_, err := mustNew(t, tt.cfg).Wrap(tt.base).Generate(ctx, userReq)
				if got := tt.base.calls(); got != tt.wantCalls {
					t.Errorf("calls = %d, want %d", got, tt.wantCalls)
				}
				if got := notSentOf(err); got != tt.want || !errors.Is(err, tt.sentinel) {
					t.Errorf("err = %v with NotSent %v, want NotSent %v wrapping %v", err, got, tt.want, tt.sentinel)
				}
			})
		})
	}
}

func background() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func deadline(d time.Duration) func() (context.Context, context.CancelFunc) {
	return func() (context.Context, context.CancelFunc) { return context.WithTimeout(context.Background(), d) }
}

func cancelAfter(d time.Duration) func() (context.Context, context.CancelFunc) {
	return func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(d, cancel)
		return ctx, cancel
	}
}
