package breaker

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/window"
)

// streamer is a streaming Model: it sends one chunk through req.OnChunk and
// returns the callback's error as is, as adapters do, or else err.
func streamer(err error) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		if cerr := req.OnChunk(portico.Chunk{Text: "a"}); cerr != nil {
			return nil, cerr
		}
		if err != nil {
			return nil, err
		}
		return okResp, nil
	})
}

// callPanics calls m with onChunk and returns what it panicked with (nil if
// it did not).
func callPanics(m portico.Model, onChunk func(portico.Chunk) error) (v any) {
	defer func() { v = recover() }()
	m.Generate(context.Background(), &portico.Request{OnChunk: onChunk})
	return nil
}

// TestCallerOnChunkPanicNotCounted: a bug in one caller's OnChunk must not open
// the route's breaker for every caller. Five panics (the default consecutive
// failures) leave it closed, with nothing in the window, and each panic goes on
// unchanged.
func TestCallerOnChunkPanicNotCounted(t *testing.T) {
	b := MustNew(Config{})
	m := b.Wrap(streamer(nil))
	for i := range 10 {
		if v := callPanics(m, func(portico.Chunk) error { panic("caller bug") }); v != "caller bug" {
			t.Fatalf("call %d: recover() = %v, want caller bug", i, v)
		}
	}
	if s := b.State(); s != Closed {
		t.Fatalf("State() after 10 OnChunk panics = %v, want closed", s)
	}
	if got := b.count.Sum(); got != (window.Counts{}) {
		t.Errorf("tally = %+v, want empty (neither failure nor success)", got)
	}
}

// TestCallerOnChunkErrorNotCounted: an OnChunk that returns a Transient
// *portico.Error, which the adapter passes through unchanged, is the caller's
// fault: not counted, and returned as is.
func TestCallerOnChunkErrorNotCounted(t *testing.T) {
	b := MustNew(Config{})
	m := b.Wrap(streamer(nil))
	stop := &portico.Error{Class: portico.Transient, Reason: "caller stop"}
	for i := range 10 {
		_, err := m.Generate(context.Background(), &portico.Request{OnChunk: func(portico.Chunk) error { return stop }})
		if err != stop {
			t.Fatalf("call %d: err = %v, want the callback's error as is", i, err)
		}
	}
	if s := b.State(); s != Closed {
		t.Fatalf("State() after 10 OnChunk errors = %v, want closed", s)
	}
	if got := b.count.Sum(); got != (window.Counts{}) {
		t.Errorf("tally = %+v, want empty (neither failure nor success)", got)
	}
}

// TestStreamingRouteFaultsStillCount: with the callback behaving, a streamed
// call's own failures and successes count as usual, and the caller's request
// keeps its own OnChunk.
func TestStreamingRouteFaultsStillCount(t *testing.T) {
	b := MustNew(Config{Trip: ConsecutiveFailures(3)})
	chunks := 0
	req := &portico.Request{OnChunk: func(portico.Chunk) error { chunks++; return nil }}
	if _, err := b.Wrap(streamer(nil)).Generate(context.Background(), req); err != nil {
		t.Fatalf("Generate = %v, want success", err)
	}
	if got := b.count.Sum(); got != (window.Counts{1}) {
		t.Errorf("tally after a streamed success = %+v, want 1 call", got)
	}
	m := b.Wrap(streamer(fail(portico.Transient)))
	for range 3 {
		m.Generate(context.Background(), req)
	}
	if s := b.State(); s != Open {
		t.Errorf("State() after 3 streamed transient failures = %v, want open", s)
	}
	if chunks != 4 {
		t.Errorf("chunks delivered = %d, want 4", chunks)
	}
	req.OnChunk(portico.Chunk{})
	if chunks != 5 {
		t.Errorf("caller's OnChunk replaced: a direct call counted %d, want 5", chunks)
	}
}

// TestCallerOnChunkFaultFreesProbe: a probe ended by the caller's OnChunk
// (panic or error) releases its slot and leaves the breaker half-open; the
// next probe closes it.
func TestCallerOnChunkFaultFreesProbe(t *testing.T) {
	for _, name := range []string{"panic", "error"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second})
				call(t, b.Wrap(scriptedErr(fail(portico.Transient))))
				time.Sleep(time.Second)
				m := b.Wrap(streamer(nil))
				stop := &portico.Error{Class: portico.Transient, Reason: "caller stop"}
				if name == "panic" {
					if v := callPanics(m, func(portico.Chunk) error { panic("caller bug") }); v != "caller bug" {
						t.Fatalf("recover() = %v, want caller bug", v)
					}
				} else if _, err := m.Generate(context.Background(), &portico.Request{OnChunk: func(portico.Chunk) error { return stop }}); err != stop {
					t.Fatalf("err = %v, want the callback's error as is", err)
				}
				if s, n := b.State(), b.probes.Load(); s != HalfOpen || n != 0 {
					t.Fatalf("after the caller's fault: State() = %v, probes = %d; want half_open, 0", s, n)
				}
				if _, err := m.Generate(context.Background(), &portico.Request{OnChunk: func(portico.Chunk) error { return nil }}); err != nil {
					t.Fatalf("next probe = %v, want success", err)
				}
				if s := b.State(); s != Closed {
					t.Errorf("State() = %v, want closed", s)
				}
			})
		})
	}
}

func scriptedErr(err error) *scripted { return &scripted{err: err} }

// TestStreamingAllocs pins the cost of guarding the caller's OnChunk: the
// request's copy with its wrapper and the wrapper's method value, two
// allocations, and only when streaming (TestClosedPathAllocs pins zero).
func TestStreamingAllocs(t *testing.T) {
	b := MustNew(Config{})
	m := b.Wrap(streamer(nil))
	req := &portico.Request{OnChunk: func(portico.Chunk) error { return nil }}
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { m.Generate(ctx, req) }); n != 2 {
		t.Errorf("allocs per streamed closed call = %v, want 2", n)
	}
}
