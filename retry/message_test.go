package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// The call's final error reads on one line, saying each thing once: the last
// attempt's class and fields, what the Retrier concluded, and the last
// attempt's error; Unwrap still reaches every attempt's error.
func TestFinalErrorMessage(t *testing.T) {
	t.Run("3 attempts failed", func(t *testing.T) {
		errs := []error{
			&portico.Error{Class: portico.Transient, Status: 502, Reason: "bad gateway"},
			&portico.Error{Class: portico.Transient, Status: 503, Reason: "overloaded"},
			&portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: time.Millisecond, Reason: "rate limited"},
		}
		base := &counting{fn: func(_ context.Context, n int, _ *portico.Request) (*portico.Response, error) { return nil, errs[n] }}
		synctest.Test(t, func(t *testing.T) {
			_, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}}).Wrap(base).Generate(context.Background(), userReq)
			// The last attempt's reason, "rate limited", is its class's.
			const want = "portico: rate_limited status 429 retry-after 1ms: retry: 3 attempts failed"
			if err == nil || err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
			for i, e := range errs {
				if !errors.Is(err, e) {
					t.Errorf("errors.Is(err, attempt %d's error) = false, want true", i)
				}
			}
			var pe *portico.Error
			if !errors.As(err, &pe) || pe.Class != portico.RateLimited || pe.Status != 429 || pe.RetryAfter != time.Millisecond ||
				!errors.Is(err, ErrAttemptsExhausted) {
				t.Errorf("err = %+v, want the last attempt's class, status and hint, wrapping ErrAttemptsExhausted", pe)
			}
		})
	})
	t.Run("3 attempt timeouts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := &counting{fn: func(ctx context.Context, _ int, _ *portico.Request) (*portico.Response, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}}
			_, err := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{Attempt: time.Second}}).Wrap(base).Generate(context.Background(), userReq)
			const want = "portico: ambiguous: retry: 3 attempts failed: retry: attempt timeout (1s)"
			if err == nil || err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
			if !errors.Is(err, ErrAttemptTimeout) || !errors.Is(err, context.DeadlineExceeded) || base.calls() != 3 {
				t.Errorf("err = %v after %d calls, want 3 calls and errors.Is ErrAttemptTimeout and DeadlineExceeded", err, base.calls())
			}
		})
	})
	t.Run("timeout the inner error already names", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := hangThen(notSent)
			_, err := mustNew(t, Config{MaxAttempts: 1, Timeouts: Timeouts{Attempt: time.Second}}).Wrap(base).Generate(context.Background(), userReq)
			const want = "portico: transient: retry: attempt timeout (1s)"
			if err == nil || err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
		})
	})
	t.Run("budget exhausted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fail := &portico.Error{Class: portico.Transient, Status: 503, Reason: "overloaded"}
			// The message names the budget that refused: the client's with a
			// burst of 1, then the destination's with a burst of 1 shared by
			// two clients.
			for _, tt := range []struct {
				budget Budget
				second string
				want   string
			}{
				{Budget{NoRefill: true, Burst: 1}, "",
					"portico: transient by retry_budget status 503: retry: client budget exhausted after 1 attempt: overloaded"},
				{Budget{NoRefill: true, Burst: 5, DestinationBurst: 1}, "other",
					"portico: transient by retry_budget status 503: retry: destination budget exhausted after 1 attempt: overloaded"},
			} {
				r := mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, MaxAttempts: 2, Budget: tt.budget})
				m := r.Wrap(failing(fail))
				m.Generate(context.Background(), userReq) // spends the one token
				second := userReq.Clone()
				second.Identity.ClientKey = tt.second
				_, err := m.Generate(context.Background(), second)
				if err == nil || err.Error() != tt.want || !errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, fail) || portico.RefuserOf(err) != portico.RetryBudget {
					t.Errorf("budget %+v: err = %q, want %q wrapping ErrBudgetExhausted and the attempt's error", tt.budget, err, tt.want)
				}
			}
		})
	})
	t.Run("first chunk timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// What an adapter reports when a layer's timeout ends its context.
			base := hangThen(func(ctx context.Context) error {
				return &portico.Error{Class: portico.Ambiguous, Model: "gpt", Reason: "timeout after the request was sent",
					Err: portico.Join(ctx.Err(), context.Cause(ctx))}
			})
			req := userReq.Clone()
			req.OnChunk = func(portico.Chunk) error { return nil }
			_, err := mustNew(t, Config{MaxAttempts: 1, Timeouts: Timeouts{FirstChunk: 1234567 * time.Microsecond}}).Wrap(base).Generate(context.Background(), req)
			const want = "portico: ambiguous model gpt: retry: first chunk timeout (1.235s)"
			if err == nil || err.Error() != want || !errors.Is(err, ErrFirstChunkTimeout) || !errors.Is(err, context.Canceled) {
				t.Errorf("err = %q, want %q wrapping ErrFirstChunkTimeout and the adapter's context.Canceled", err, want)
			}
		})
	})
	t.Run("chunk gap timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := &counting{fn: func(ctx context.Context, _ int, req *portico.Request) (*portico.Response, error) {
				req.OnChunk(portico.Chunk{Text: "a"})
				<-ctx.Done()
				return nil, ctx.Err()
			}}
			req := userReq.Clone()
			req.OnChunk = func(portico.Chunk) error { return nil }
			_, err := mustNew(t, Config{Timeouts: Timeouts{ChunkGap: 500 * time.Millisecond}}).Wrap(base).Generate(context.Background(), req)
			const want = "portico: ambiguous: retry: chunk gap timeout (500ms)"
			if err == nil || err.Error() != want || !errors.Is(err, ErrChunkGapTimeout) {
				t.Errorf("err = %q, want %q wrapping ErrChunkGapTimeout", err, want)
			}
		})
	})
	t.Run("timeout with an inner error of its own", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The inner model ignores the timeout's cancellation and fails on
			// its own: what it says is kept.
			base := &counting{fn: func(ctx context.Context, _ int, _ *portico.Request) (*portico.Response, error) {
				<-ctx.Done()
				return nil, &portico.Error{Class: portico.Transient, Status: 502, Reason: "bad gateway"}
			}}
			_, err := mustNew(t, Config{MaxAttempts: 1, Timeouts: Timeouts{Attempt: time.Second}}).Wrap(base).Generate(context.Background(), userReq)
			const want = "portico: transient: retry: attempt timeout (1s): transient status 502: bad gateway"
			if err == nil || err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
		})
	})
	t.Run("no time left keeps the last class", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			fail := &portico.Error{Class: portico.Transient, Status: 503, Reason: "overloaded"}
			r := mustNew(t, Config{Backoff: Backoff{Schedule: Exponential, BaseDelay: 2 * time.Second, MaxDelay: 2 * time.Second}})
			_, err := r.Wrap(failing(fail)).Generate(ctx, userReq)
			const want = "portico: deadline status 503 retry-after 2s: retry: no time left after 1 attempt: transient status 503: overloaded"
			if err == nil || err.Error() != want || !errors.Is(err, ErrNoTimeLeft) {
				t.Errorf("err = %q, want %q wrapping ErrNoTimeLeft", err, want)
			}
		})
	})
	t.Run("no time for the first attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := mustNew(t, Config{MinAttemptTime: 2 * time.Second}).Wrap(failing(transient())).Generate(ctx, userReq)
			const want = "portico: deadline: retry: no time left for an attempt"
			if err == nil || err.Error() != want || !errors.Is(err, ErrNoTimeLeft) {
				t.Errorf("err = %q, want %q wrapping ErrNoTimeLeft", err, want)
			}
		})
	})
}
