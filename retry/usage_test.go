package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// rejected is an attempt error for an answer that came back, was billed u, and
// was rejected (InvalidResponse); u nil means nothing was billed.
func rejected(u *portico.Usage) error {
	return &portico.Error{Class: portico.InvalidResponse, Reason: "schema", Usage: u}
}

// script returns a Model that fails call n with errs[n] (the last one repeats).
func script(errs ...error) *counting {
	return &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
		return nil, errs[min(n, len(errs)-1)]
	}}
}

// usageAt returns the Usage of the first *portico.Error in err's chain, as
// package ratelimit's Refund reads it.
func usageAt(t *testing.T, err error) *portico.Usage {
	t.Helper()
	var pe *portico.Error
	if !errors.As(err, &pe) {
		t.Fatalf("errors.As(%v, *portico.Error) = false", err)
	}
	return pe.Usage
}

// The final error of a call whose attempts were billed carries the sum of
// every attempt's billed usage, so that fallback's Response.Cost and
// ratelimit's refunds see all the route billed, not the last attempt's only.
func TestFinalErrorSumsBilledUsage(t *testing.T) {
	u := func(in, out, cached int) *portico.Usage {
		return &portico.Usage{InputTokens: in, OutputTokens: out, CachedInputTokens: cached}
	}
	single := u(100, 10, 0)
	cases := []struct {
		name string
		errs []error
		want *portico.Usage // nil: no Usage
	}{
		{"three billed attempts", []error{rejected(u(100, 10, 0))}, u(300, 30, 0)},
		{"unbilled attempts add nothing", []error{rejected(u(100, 10, 5)), rejected(nil), rejected(u(50, 5, 0))}, u(150, 15, 5)},
		{"one billed attempt keeps its usage", []error{rejected(nil), rejected(single), rejected(nil)}, single},
		{"billed last only", []error{transient(), transient(), rejected(u(7, 3, 2))}, u(7, 3, 2)},
		{"nothing billed", []error{rejected(nil), transient()}, nil},
		{"usage wrapped deeper in an attempt's error", []error{
			fmt.Errorf("layer: %w", rejected(u(1, 2, 3))),
			&portico.Error{Class: portico.Transient, Err: rejected(u(10, 20, 30))},
			rejected(u(100, 200, 300))}, u(111, 222, 333)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := make([]portico.Usage, 0, len(c.errs))
			for _, e := range c.errs {
				if x := portico.UsageOf(e); x != nil {
					before = append(before, *x)
				}
			}
			r := mustNew(t, Config{MaxAttempts: 3, RetryInvalidResponse: true, Backoff: Backoff{Schedule: Immediate}})
			base := script(c.errs...)
			_, err := r.Wrap(base).Generate(context.Background(), userReq)
			if base.calls() != 3 || !errors.Is(err, ErrAttemptsExhausted) {
				t.Fatalf("Generate = %v after %d calls, want ErrAttemptsExhausted after 3", err, base.calls())
			}
			got := usageAt(t, err)
			switch {
			case c.want == nil && got != nil:
				t.Errorf("final Usage = %+v, want nil", *got)
			case c.want != nil && (got == nil || *got != *c.want):
				t.Errorf("final Usage = %v, want %+v", got, *c.want)
			}
			if c.want == single && got != single {
				t.Errorf("final Usage = %p, want the one billed attempt's own %p", got, single)
			}
			i := 0
			for _, e := range c.errs {
				if x := portico.UsageOf(e); x != nil {
					if *x != before[i] {
						t.Errorf("attempt usage changed to %+v, want %+v (summing must not write to it)", *x, before[i])
					}
					i++
				}
			}
		})
	}
}

// The other ends of a retried call sum the billed usage too: the budget
// running out, the deadline leaving no time, and the caller canceling during
// the wait.
func TestEveryFinalErrorSumsBilledUsage(t *testing.T) {
	billed := rejected(&portico.Usage{InputTokens: 100, OutputTokens: 10})
	want := portico.Usage{InputTokens: 200, OutputTokens: 20}
	check := func(t *testing.T, err, sentinel error, calls int) {
		t.Helper()
		if calls != 2 || !errors.Is(err, sentinel) {
			t.Fatalf("Generate = %v after %d calls, want %v after 2", err, calls, sentinel)
		}
		if got := usageAt(t, err); got == nil || *got != want {
			t.Errorf("final Usage = %v, want %+v", got, want)
		}
	}
	t.Run("budget exhausted", func(t *testing.T) {
		r := mustNew(t, Config{RetryInvalidResponse: true, Budget: Budget{NoRefill: true, Burst: 1}, Backoff: Backoff{Schedule: Immediate}})
		base := script(billed)
		_, err := r.Wrap(base).Generate(context.Background(), userReq)
		check(t, err, ErrBudgetExhausted, base.calls())
	})
	t.Run("no time left", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := mustNew(t, Config{RetryInvalidResponse: true, Backoff: Backoff{Schedule: Exponential, BaseDelay: time.Second}})
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			base := script(billed) // attempt 0, wait 1 s, attempt 1; the 2 s wait does not fit
			_, err := r.Wrap(base).Generate(ctx, userReq)
			check(t, err, ErrNoTimeLeft, base.calls())
		})
	})
	t.Run("canceled during the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := mustNew(t, Config{RetryInvalidResponse: true, Backoff: Backoff{Schedule: Exponential, BaseDelay: time.Second}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			base := &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) {
				if n == 1 {
					time.AfterFunc(time.Second/2, cancel) // during the 2 s wait
				}
				return nil, billed
			}}
			_, err := r.Wrap(base).Generate(ctx, userReq)
			if portico.ClassOf(err) != portico.Canceled {
				t.Errorf("ClassOf(%v) = %v, want Canceled", err, portico.ClassOf(err))
			}
			check(t, err, billed, base.calls())
		})
	})
}
