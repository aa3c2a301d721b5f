package breaker

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// The zero Config trips at once on an Unusable failure (a revoked key does
// not heal by itself), and opens for OpenFor; the transition names the class.
func TestDefaultTripOpensAtOnceOnUnusable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustNew(Config{OnStateChange: rec.hook})
		f := &scripted{queue: []error{fail(portico.Transient), fail(portico.Permanent), fail(portico.Unusable)}}
		m := b.Wrap(f)
		for range 3 {
			call(t, m)
		}
		if b.State() != Open || !slices.Equal(rec.path(), []string{"closed>open:unusable"}) {
			t.Fatalf("after transient, permanent, unusable: %v, transitions %v; want open, closed>open:unusable", b.State(), rec.path())
		}
		if tr := rec.trs[0]; tr.Class != portico.Unusable || tr.OpenFor != 30*time.Second {
			t.Errorf("transition = %+v, want class unusable, open for 30s", tr)
		}
		err := call(t, m)
		if !errors.Is(err, ErrOpen) || portico.RetryAfterOf(err) != 30*time.Second || f.n() != 3 {
			t.Errorf("next call = %v (%d calls made), want ErrOpen with retry-after 30s, not called", err, f.n())
		}
	})
}

// A rule of its own decides whether Unusable trips at once; either way it is
// a counted failure, so 5 in a row trip ConsecutiveFailures(5).
func TestUnusableCountsAsFailure(t *testing.T) {
	rec := &recorder{}
	b := MustNew(Config{Trip: ConsecutiveFailures(5), OnStateChange: rec.hook})
	m := b.Wrap(&scripted{err: fail(portico.Unusable)})
	for i := range 4 {
		call(t, m)
		if b.State() != Closed {
			t.Fatalf("after %d unusable failures: %v, want closed", i+1, b.State())
		}
	}
	call(t, m)
	if b.State() != Open || !slices.Equal(rec.path(), []string{"closed>open:consecutive failures"}) {
		t.Errorf("after 5: %v, %v; want open by consecutive failures", b.State(), rec.path())
	}
}

func TestOnClass(t *testing.T) {
	r := OnClass(portico.Unusable, portico.RateLimited)
	for _, tc := range []struct {
		c    portico.Class
		want string
	}{{portico.Unusable, "unusable"}, {portico.RateLimited, "rate_limited"}, {portico.Transient, ""}, {portico.OK, ""}} {
		if got := r(Counts{Calls: 1, Failures: 1, ConsecutiveFailures: 1, Class: tc.c}); got != tc.want {
			t.Errorf("OnClass(unusable, rate_limited)(class %v) = %q, want %q", tc.c, got, tc.want)
		}
	}
	// Alone it is a valid rule; on a class the breaker never counts as a
	// failure it can never trip, a mistake New refuses.
	if _, err := New(Config{Trip: OnClass(portico.Unusable)}); err != nil {
		t.Errorf("New(Trip: OnClass(unusable)) = %v, want nil", err)
	}
	if _, err := New(Config{Trip: OnClass(portico.Permanent)}); err == nil || err.Error() != "breaker: Config.Trip does not trip even on a full window of failed calls" {
		t.Errorf("New(Trip: OnClass(permanent)) = %v, want the cannot-trip error", err)
	}
}

func rateLimited(d time.Duration) error {
	return &portico.Error{Class: portico.RateLimited, Status: 429, RetryAfter: d}
}

// The open interval never ends before a Retry-After the route announced:
// tripped by a 429 with retry-after 5 s, a breaker with OpenFor 1 s admits
// no probe before 5 s. RetryAfter counts down to it; Available turns true
// exactly then.
func TestOpenLastsUntilRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second, OnStateChange: rec.hook})
		f := &scripted{queue: []error{rateLimited(5 * time.Second)}}
		m := b.Wrap(f)
		if b.RetryAfter() != 0 {
			t.Errorf("closed: RetryAfter() = %v, want 0", b.RetryAfter())
		}
		call(t, m)
		if tr := rec.trs[0]; tr.To != Open || tr.OpenFor != 5*time.Second || tr.Class != portico.RateLimited {
			t.Fatalf("transition %+v, want open for 5s on rate_limited", tr)
		}
		t0 := time.Now()
		for _, at := range []time.Duration{time.Second, 4999 * time.Millisecond} {
			time.Sleep(at - time.Since(t0))
			if b.Available() || b.RetryAfter() != 5*time.Second-at {
				t.Errorf("at %v: Available %v, RetryAfter %v; want false, %v", at, b.Available(), b.RetryAfter(), 5*time.Second-at)
			}
			if err := call(t, m); portico.RetryAfterOf(err) != 5*time.Second-at || f.n() != 1 {
				t.Errorf("at %v: call = %v after %d calls, want rejected with retry-after %v", at, err, f.n(), 5*time.Second-at)
			}
		}
		time.Sleep(time.Millisecond)
		if !b.Available() || b.RetryAfter() != 0 {
			t.Errorf("at 5s: Available %v, RetryAfter %v; want true, 0", b.Available(), b.RetryAfter())
		}
		if err := call(t, m); err != nil || f.n() != 2 || b.State() != Closed {
			t.Errorf("probe at 5s = %v (%d calls), state %v; want success on the second call, closed", err, f.n(), b.State())
		}
	})
}

// A Retry-After announced before the trip, by a failure that did not trip
// it, still bounds the open interval; so does one a failed probe carries.
func TestOpenLastsUntilEarlierOrProbeRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustNew(Config{Trip: ConsecutiveFailures(2), OpenFor: time.Second, OnStateChange: rec.hook})
		f := &scripted{queue: []error{rateLimited(10 * time.Second), fail(portico.Transient), rateLimited(7 * time.Second)}}
		m := b.Wrap(f)
		call(t, m) // t=0: retry-after 10 s, one failure: still closed
		time.Sleep(2 * time.Second)
		call(t, m) // t=2s: trips; OpenFor would end at 3 s, the hint at 10 s
		if b.State() != Open || rec.trs[0].OpenFor != 8*time.Second || b.RetryAfter() != 8*time.Second {
			t.Fatalf("at 2s: %v, transition %+v, RetryAfter %v; want open for 8s", b.State(), rec.trs[0], b.RetryAfter())
		}
		time.Sleep(8 * time.Second)
		call(t, m) // t=10s: the probe fails with retry-after 7 s: open until 17 s, not 11 s
		if got := rec.path(); !slices.Equal(got, []string{"closed>open:consecutive failures", "open>half_open:open interval elapsed", "half_open>open:probe failed"}) {
			t.Fatalf("transitions = %v", got)
		}
		if tr := rec.trs[2]; tr.OpenFor != 7*time.Second || b.RetryAfter() != 7*time.Second {
			t.Errorf("reopened for %v (RetryAfter %v), want 7s", tr.OpenFor, b.RetryAfter())
		}
	})
}

// A Retry-After holds the breaker open past OpenFor, but for
// MaxRetryAfterHold at most: a hint of a day opens it for 5 minutes.
func TestRetryAfterHoldIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OnStateChange: rec.hook})
		m := b.Wrap(&scripted{err: &portico.Error{Class: portico.RateLimited, RetryAfter: 24 * time.Hour}})
		call(t, m)
		if len(rec.trs) != 1 || rec.trs[0].OpenFor != MaxRetryAfterHold {
			t.Fatalf("transitions %+v, want one opening for %v", rec.trs, MaxRetryAfterHold)
		}
		time.Sleep(MaxRetryAfterHold)
		if !b.Available() {
			t.Errorf("after %v: not available, want a probe admitted", MaxRetryAfterHold)
		}
	})
}
