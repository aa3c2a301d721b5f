package breaker

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
)

// nopStore holds nothing.
type nopStore struct{}

func (nopStore) Until(string) time.Time { return time.Time{} }
func (nopStore) Set(string, time.Time)  {}

// Breakers sharing a Store under one Name open together: one trips, the
// other (closed) rejects calls without making them, reports Open, is
// unavailable and says when the interval ends, until it ends; a failed probe publishes
// the next interval; a later Retry-After raises the published end.
func TestSharedOpenOpensEveryone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, _ := fallback.NewMemoryCooldowns(0)
		here, there := &scripted{err: fail(portico.Unusable)}, &scripted{}
		a := MustNew(Config{Name: "r", OpenFor: 10 * time.Second, Shared: store})
		b := MustNew(Config{Name: "r", OpenFor: 10 * time.Second, Shared: store})
		ma, mb := a.Wrap(here), b.Wrap(there)
		if err := call(t, mb); err != nil || !b.Available() || b.RetryAfter() != 0 {
			t.Fatalf("before any trip: b's call = %v, Available %v, RetryAfter %v; want ok, true, 0", err, b.Available(), b.RetryAfter())
		}
		call(t, ma) // Unusable: a trips at once
		if got := time.Until(store.Until("breaker:r")); a.State() != Open || got != 10*time.Second {
			t.Fatalf("a %v, published %v left; want open, 10s", a.State(), got)
		}
		time.Sleep(4 * time.Second)
		err := call(t, mb)
		var pe *portico.Error
		if !errors.As(err, &pe) || !errors.Is(err, ErrOpen) || pe.Class != portico.Rejected || pe.RetryAfter != 6*time.Second ||
			pe.Reason != "breaker open elsewhere" || there.n() != 1 {
			t.Errorf("at 4s: b's call = %v (%d made); want Rejected ErrOpen, retry-after 6s, not made", err, there.n())
		}
		// b behaves as open, and says so: a dashboard of b's State shows the route out.
		if b.State() != Open || b.Available() || b.RetryAfter() != 6*time.Second {
			t.Errorf("at 4s: b %v, Available %v, RetryAfter %v; want open, false, 6s", b.State(), b.Available(), b.RetryAfter())
		}
		time.Sleep(6 * time.Second) // a's probe is due and fails: 10 s more, announced 30 s
		here.set(&portico.Error{Class: portico.RateLimited, RetryAfter: 30 * time.Second})
		call(t, ma)
		if got := b.RetryAfter(); a.State() != Open || got != 30*time.Second || b.Available() {
			t.Errorf("after a's failed probe: a %v, b RetryAfter %v, Available %v; want open, 30s, false", a.State(), got, b.Available())
		}
		time.Sleep(30 * time.Second)
		if b.State() != Closed || !b.Available() {
			t.Errorf("at the end, before b's call: b %v, Available %v; want closed, true", b.State(), b.Available())
		}
		if err := call(t, mb); err != nil || !b.Available() || there.n() != 2 {
			t.Errorf("at the end: b's call = %v (%d made), Available %v; want made and ok", err, there.n(), b.Available())
		}
	})
}

// A breaker open for good publishes an end the store can hold; a shared
// closed path stays free of allocations.
func TestSharedEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, _ := fallback.NewMemoryCooldowns(0)
		a := MustNew(Config{Name: "r", Trip: ConsecutiveFailures(1), OpenFor: math.MaxInt64 - 1, Shared: store})
		b := MustNew(Config{Name: "r", Shared: store})
		call(t, a.Wrap(&scripted{err: fail(portico.Transient)}))
		time.Sleep(time.Hour)
		if b.Available() || b.RetryAfter() < 200*365*24*time.Hour {
			t.Errorf("b after a opened for good: Available %v, RetryAfter %v; want false, centuries", b.Available(), b.RetryAfter())
		}
	})
	store, _ := fallback.NewMemoryCooldowns(0)
	m := MustNew(Config{Name: "r", Shared: store}).Wrap(&scripted{})
	ctx, req := context.Background(), &portico.Request{}
	if n := testing.AllocsPerRun(1000, func() { m.Generate(ctx, req) }); n != 0 {
		t.Errorf("allocs per shared closed call = %v, want 0", n)
	}
}
