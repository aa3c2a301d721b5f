package retry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
)

// TestRetryReadsTheRouteCooldown: a route that fails with a 503 while an
// outer layer keeps it cooling down (portico.ContextWithCooldown: another
// request's, or another instance's, 429) is not called again within the
// cooldown. A retry due before the cooldown ends takes the cooldown as the
// route's Retry-After: with a cap on a wait in place shorter than it (a
// group with another route), the call ends at once, RateLimited with the
// cooldown as RetryAfter, after one call; without one it waits for the
// cooldown's end and retries then. A cooldown that starts during the
// backoff is read again after it: the retry is not made, and its budget
// token is given back. Without the rule the route was called again after
// the backoff (200 ms), inside its cooldown.
func TestRetryReadsTheRouteCooldown(t *testing.T) {
	hello := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}, Identity: portico.Identity{ClientKey: "c"}}
	for _, c := range []struct {
		name      string
		coolFrom  time.Duration // when the cooldown is set, from the call's start
		coolUntil time.Duration // when it ends
		maxWait   time.Duration // the outer layer's cap; 0: none
		calls     int
		at        time.Duration // when the call ended
		err       bool
	}{
		{"cooling past the backoff, another route", 0, time.Second, 500 * time.Millisecond, 1, 0, true},
		{"cooling past the backoff, no other route", 0, time.Second, 0, 2, time.Second, false},
		{"cooling starts during the backoff", 100 * time.Millisecond, time.Second, 500 * time.Millisecond, 1, 200 * time.Millisecond, true},
		{"cooling ends before the backoff", 0, 100 * time.Millisecond, 500 * time.Millisecond, 2, 200 * time.Millisecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)), modeltest.Answer("ok"))
				r := retry.MustNew(retry.Config{Destination: "a", Backoff: retry.Backoff{Schedule: retry.Exponential, BaseDelay: 200 * time.Millisecond}})
				start := time.Now()
				var until atomic.Int64 // ns after start; 0: none
				if c.coolFrom == 0 {
					until.Store(int64(c.coolUntil))
				} else {
					time.AfterFunc(c.coolFrom, func() { until.Store(int64(c.coolUntil)) })
				}
				ctx := portico.ContextWithCooldown(context.Background(), func() time.Time {
					if u := until.Load(); u != 0 {
						return start.Add(time.Duration(u))
					}
					return time.Time{}
				})
				if c.maxWait > 0 {
					ctx = portico.ContextWithMaxWait(ctx, c.maxWait)
				}
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				level := r.BudgetLevel("a", "c")
				resp, err := r.Wrap(f).Generate(ctx, hello)
				if got := time.Since(start); f.Count() != c.calls || got != c.at || (err != nil) != c.err {
					t.Fatalf("Generate = %v, %v after %v, %d calls; want error %v after %v, %d calls", resp, err, got, f.Count(), c.err, c.at, c.calls)
				}
				for i, call := range f.Calls()[1:] {
					if at := call.Time.Sub(start); at < c.coolUntil {
						t.Errorf("call %d at %v, within the cooldown (until %v)", i+1, at, c.coolUntil)
					}
				}
				if !c.err {
					return
				}
				var pe *portico.Error
				if !errors.As(err, &pe) || pe.Class != portico.RateLimited || !errors.Is(err, retry.ErrRetryAfterTooLong) || pe.RetryAfter != c.coolUntil-c.at {
					t.Errorf("err = %#v; want RateLimited, ErrRetryAfterTooLong, RetryAfter %v", err, c.coolUntil-c.at)
				}
				// The retry not made took no token: the new request's deposit alone.
				if got := r.BudgetLevel("a", "c"); got < level {
					t.Errorf("budget level %v after the call, %v before; want no token taken", got, level)
				}
			})
		})
	}
}

// TestCooldownWaitsAreCapped: a route whose cooldown another instance
// keeps extending, always 400 ms ahead when the retry wakes, under an
// outer layer's 500 ms cap on a wait in place and a 1 h deadline. The
// retry waits 400 ms once; the next reading would make the whole wait
// 800 ms, past the cap, so the call ends then, RateLimited with the
// cooldown's 400 ms as RetryAfter, after one call. Before, each reading
// was checked alone and the retry waited in place for the whole hour.
func TestCooldownWaitsAreCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)), modeltest.Answer("ok"))
		r := retry.MustNew(retry.Config{Destination: "a", Backoff: retry.Backoff{Schedule: retry.Exponential, BaseDelay: 200 * time.Millisecond}})
		ctx := portico.ContextWithMaxWait(context.Background(), 500*time.Millisecond)
		ctx = portico.ContextWithCooldown(ctx, func() time.Time { return time.Now().Add(400 * time.Millisecond) })
		ctx, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		start := time.Now()
		resp, err := r.Wrap(f).Generate(ctx, &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}})
		var pe *portico.Error
		if took := time.Since(start); f.Count() != 1 || took != 400*time.Millisecond || !errors.As(err, &pe) || pe.Class != portico.RateLimited ||
			!errors.Is(err, retry.ErrRetryAfterTooLong) || pe.RetryAfter != 400*time.Millisecond {
			t.Fatalf("Generate = %v, %v after %v, %d calls; want RateLimited, ErrRetryAfterTooLong, RetryAfter 400ms, after 400ms and 1 call", resp, err, took, f.Count())
		}
	})
}

// A route's cooldown shorter than the Retry-After the route announced does
// not shorten the hint the error carries: the call ends for the longer one.
func TestShorterCooldownKeepsTheRetryAfter(t *testing.T) {
	hello := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}, Identity: portico.Identity{ClientKey: "c"}}
	synctest.Test(t, func(t *testing.T) {
		limited := &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: 30 * time.Second}
		f := modeltest.NewFake(modeltest.Fail(limited), modeltest.Answer("ok"))
		r := retry.MustNew(retry.Config{Destination: "a"})
		start := time.Now()
		ctx := portico.ContextWithCooldown(context.Background(), func() time.Time { return start.Add(5 * time.Second) })
		ctx = portico.ContextWithMaxWait(ctx, 500*time.Millisecond)
		_, err := r.Wrap(f).Generate(ctx, hello)
		if got := portico.RetryAfterOf(err); f.Count() != 1 || got != 30*time.Second {
			t.Errorf("Generate: %d calls, RetryAfter %v (%v); want 1 call, the route's 30s", f.Count(), got, err)
		}
	})
}
