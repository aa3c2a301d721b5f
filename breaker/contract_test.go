package breaker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/window"
)

// TestNilRequest: a nil *Request is refused with the shared
// portico.ErrNilRequest without calling the route or counting anything, in
// every state.
func TestNilRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second})
		f := &scripted{}
		m := b.Wrap(f)
		check := func(state State) {
			t.Helper()
			resp, err := m.Generate(context.Background(), nil)
			if resp != nil || err != portico.ErrNilRequest {
				t.Fatalf("%v: Generate(nil) = %v, %v; want nil, portico.ErrNilRequest", state, resp, err)
			}
		}
		check(Closed)
		if f.n() != 0 || b.count.Sum() != (window.Counts{}) {
			t.Fatalf("closed: model calls %d, tally %+v; want 0 and empty", f.n(), b.count.Sum())
		}
		f.set(fail(portico.Transient))
		call(t, m)
		check(Open)
		time.Sleep(time.Second)
		check(Open) // due: a nil request must not take the probe
		if s, n := b.State(), b.probes.Load(); s != Open || n != 0 || f.n() != 1 {
			t.Fatalf("after nil requests: State() = %v, probes %d, calls %d; want open, 0, 1", s, n, f.n())
		}
	})
}

// TestNilResponse: a Model that returns neither a Response nor an error breaks
// the contract; the breaker returns portico.ErrNilResponse (InvalidResponse)
// and counts it as a failure of the route, closed, streaming or probing.
func TestNilResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		null := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) { return nil, nil })
		b := MustNew(Config{Trip: ConsecutiveFailures(2), OpenFor: time.Second})
		m := b.Wrap(null)
		for i, req := range []*portico.Request{{}, {OnChunk: func(portico.Chunk) error { return nil }}} {
			resp, err := m.Generate(context.Background(), req)
			if resp != nil || !errors.Is(err, portico.ErrNilResponse) || portico.ClassOf(err) != portico.InvalidResponse {
				t.Fatalf("call %d: Generate = %v, %v; want nil, portico.ErrNilResponse", i, resp, err)
			}
		}
		if s := b.State(); s != Open {
			t.Fatalf("State() after 2 nil responses = %v, want open", s)
		}
		time.Sleep(time.Second)
		if _, err := m.Generate(context.Background(), &portico.Request{}); !errors.Is(err, portico.ErrNilResponse) {
			t.Fatalf("probe err = %v, want portico.ErrNilResponse", err)
		}
		if s, n := b.State(), b.probes.Load(); s != Open || n != 0 {
			t.Errorf("after a nil-response probe: State() = %v, probes %d; want open, 0", s, n)
		}
	})
}
