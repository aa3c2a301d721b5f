package ratelimit

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/retry"
)

// TestNothingSentRefundsAll: a call that ends before anything was sent gets
// its whole reservation back, whoever below the Limiter ended it; one that
// may have been sent does not. The Limiter (b = 1,000) reserves 100 + 400;
// the level after the call is 1,000 when everything came back. (Canceled
// and Deadline errors refunded nothing, whatever ended them, so a call
// canceled before it was sent, or a fallback that called no route because
// no time was left, cost its key 500 tokens.)
func TestNothingSentRefundsAll(t *testing.T) {
	const all, output, none = 1000, 900, 500
	ms := time.Millisecond
	tests := []struct {
		name    string
		timeout time.Duration // the caller's deadline, when positive
		cancel  time.Duration // the caller cancels then, when positive
		inner   func(t *testing.T) portico.Model
		want    float64
	}{
		{"canceled before the request was written", 0, 0, func(*testing.T) portico.Model {
			return errModel(&portico.Error{Class: portico.Canceled, NotSent: true})
		}, all},
		{"deadline before the request was written", 0, 0, func(*testing.T) portico.Model {
			return errModel(&portico.Error{Class: portico.Deadline, NotSent: true})
		}, all},
		{"transient, never sent", 0, 0, func(*testing.T) portico.Model {
			return errModel(&portico.Error{Class: portico.Transient, Reason: "connection refused", NotSent: true})
		}, all},
		{"no time for retry's first attempt", 500 * ms, 0, func(*testing.T) portico.Model {
			return retry.MustNew(retry.Config{MinAttemptTime: time.Second}).Wrap(okModel(100, 100))
		}, all},
		{"breaker open", 0, 0, func(t *testing.T) portico.Model {
			brk := breaker.MustNew(breaker.Config{Trip: breaker.ConsecutiveFailures(1)})
			m := brk.Wrap(errModel(&portico.Error{Class: portico.Transient, Status: 503}))
			m.Generate(t.Context(), req("a", 1)) // trips it, outside the Limiter
			return m
		}, all},
		{"fallback with no time left for any route", 50 * ms, 0, func(*testing.T) portico.Model {
			g := fallback.MustNew(fallback.Config{Routes: []portico.Route{{Name: "r", Model: okModel(100, 100)}}})
			return portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
				time.Sleep(60 * ms) // a layer between the two took the time left
				return g.Generate(ctx, r)
			})
		}, all},
		{"inner Limiter's wait canceled", 0, time.Second, func(t *testing.T) portico.Model {
			inner := mustNew(t, Config{Limits: Limits{Requests: 1, Period: time.Hour}, Mode: Wait, MaxWait: 2 * time.Hour})
			m := inner.Wrap(okModel(100, 100))
			m.Generate(t.Context(), req("a", 1)) // takes the hour's one request
			return m
		}, all},
		// May have been sent: the class rule.
		{"canceled mid-generation", 0, 0, func(*testing.T) portico.Model {
			return errModel(&portico.Error{Class: portico.Canceled, Status: 200})
		}, none},
		{"canceled, not known to be unsent", 0, 0, func(*testing.T) portico.Model {
			return errModel(&portico.Error{Class: portico.Canceled})
		}, none},
		{"ambiguous", 0, 0, func(*testing.T) portico.Model {
			return errModel(&portico.Error{Class: portico.Ambiguous})
		}, none},
		{"503", 0, 0, func(*testing.T) portico.Model {
			return errModel(&portico.Error{Class: portico.Transient, Status: 503})
		}, output},
		{"401 on an unusable route", 0, 0, func(*testing.T) portico.Model {
			return errModel(&portico.Error{Class: portico.Unusable, Status: 401})
		}, output},
		// A retry refused below the Retrier (a throttle) after an attempt
		// that was sent: only what was not sent comes back.
		{"retry: sent (ambiguous), then refused", 0, 0, func(*testing.T) portico.Model {
			return retried(&portico.Error{Class: portico.Ambiguous}, throttled)
		}, none},
		{"retry: sent (503), then refused", 0, 0, func(*testing.T) portico.Model {
			return retried(&portico.Error{Class: portico.Transient, Status: 503}, throttled)
		}, output},
		{"retry: refused at once", 0, 0, func(*testing.T) portico.Model {
			return retried(throttled)
		}, all},
		// A fallback group whose first route answered 400 (sent: the input
		// may count) and whose second refused without sending: the group
		// says Rejected, and only the output reserve comes back.
		{"fallback: 400, then a refused route", 0, 0, func(*testing.T) portico.Model {
			return grouped(errModel(&portico.Error{Class: portico.Incompatible, Status: 400}), errModel(throttled))
		}, output},
		{"fallback: every route refused", 0, 0, func(*testing.T) portico.Model {
			return grouped(errModel(throttled), errModel(throttled))
		}, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// A day's period: refill over the test's second is below 0.02.
				l := mustNew(t, Config{Limits: Limits{Tokens: 1000, Period: 24 * time.Hour}, Estimator: fixedEstimator(100)})
				m := l.Wrap(tt.inner(t))
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.timeout > 0 {
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				if tt.cancel > 0 {
					time.AfterFunc(tt.cancel, cancel)
				}
				r := req("a", 400)
				start := time.Now()
				if _, err := m.Generate(ctx, r); err == nil {
					t.Fatalf("Generate = nil error, want the call to fail")
				}
				got := l.levelOf(r, time.Now())
				if tt.want == all {
					if got != all {
						t.Errorf("level after the call = %v, want %v (all of it back)", got, float64(all))
					}
					return
				}
				// Not all back: what came back, plus the refill since the start.
				refill := 1000.0 / 86400 * time.Since(start).Seconds()
				if got != tt.want+refill {
					t.Errorf("level after the call = %v, want %v", got, tt.want+refill)
				}
			})
		})
	}
}

// Refund's rule for NotSent and Unusable, without a Limiter.
func TestRefundNotSent(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{&portico.Error{Class: portico.Canceled, NotSent: true}, 500},
		{&portico.Error{Class: portico.Deadline, NotSent: true}, 500},
		{&portico.Error{Class: portico.Ambiguous, NotSent: true}, 500},
		{&portico.Error{Class: portico.Canceled}, 0},
		{&portico.Error{Class: portico.Unusable, Status: 403}, 400},
		{&portico.Error{Class: portico.Unusable}, 500},
		// Billed usage wins over NotSent: something was sent after all.
		{&portico.Error{Class: portico.Canceled, NotSent: true, Usage: &portico.Usage{InputTokens: 100, OutputTokens: 50}}, 350},
	} {
		if got := Refund(tt.err, 100, 400); got != tt.want {
			t.Errorf("Refund(%+v, 100, 400) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// throttled is a throttle's refusal of an attempt it never sent.
var throttled = &portico.Error{Class: portico.Rejected, Reason: "throttled", NotSent: true}

// retried is a retry layer (immediate retries) over a Model whose call n
// fails with errs[n], the last repeating.
func retried(errs ...error) portico.Model {
	var n atomic.Int64
	inner := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, errs[min(int(n.Add(1))-1, len(errs)-1)]
	})
	return retry.MustNew(retry.Config{Backoff: retry.Backoff{Schedule: retry.Immediate}}).Wrap(inner)
}

// grouped is a fallback group over the routes "a", "b"... whose Models are
// ms, called with a message added to the request (the group refuses one
// without).
func grouped(ms ...portico.Model) portico.Model {
	routes := make([]portico.Route, len(ms))
	for i, m := range ms {
		routes[i] = portico.Route{Name: string(rune('a' + i)), Model: m}
	}
	g := fallback.MustNew(fallback.Config{Routes: routes})
	return portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
		c := *r
		c.Messages = []portico.Message{portico.Text(portico.RoleUser, "hi")}
		return g.Generate(ctx, &c)
	})
}
