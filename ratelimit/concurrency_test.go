package ratelimit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// movingCap is a Concurrency whose limit a test sets, recording what Done
// reports.
type movingCap struct {
	limit atomic.Int64
	mu    sync.Mutex
	done  []doneCall
}

type doneCall struct {
	latency  time.Duration
	inflight int
	class    portico.Class
}

func (c *movingCap) Limit() int { return int(c.limit.Load()) }

func (c *movingCap) Done(latency time.Duration, inflight int, class portico.Class) {
	c.mu.Lock()
	c.done = append(c.done, doneCall{latency, inflight, class})
	c.mu.Unlock()
}

// A Concurrency alone is a valid limit, and caps the calls in flight: with a
// cap of 2, the third concurrent call is shed; the cap then moves to 3 and a
// third call goes in.
func TestConcurrencyCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &movingCap{}
		c.limit.Store(2)
		l := mustNew(t, Config{Concurrency: c})
		m := l.Wrap(slowModel(time.Second, 1))
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { m.Generate(t.Context(), req("a", 1)) })
		}
		synctest.Wait()
		if _, err := m.Generate(t.Context(), req("a", 1)); !errors.Is(err, ErrOverloaded) {
			t.Errorf("third call at a cap of 2 = %v, want ErrOverloaded", err)
		}
		c.limit.Store(3)
		wg.Go(func() {
			if _, err := m.Generate(t.Context(), req("a", 1)); err != nil {
				t.Errorf("third call at a cap of 3 = %v, want an answer", err)
			}
		})
		wg.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		// The shed call is not reported: it was never admitted. The first two
		// end together, in either order.
		slices.SortFunc(c.done, func(a, b doneCall) int { return a.inflight - b.inflight })
		want := []doneCall{{time.Second, 1, portico.OK}, {time.Second, 2, portico.OK}, {time.Second, 3, portico.OK}}
		if len(c.done) != len(want) {
			t.Fatalf("Done called %d times, want %d", len(c.done), len(want))
		}
		for i, d := range c.done {
			if d != want[i] {
				t.Errorf("Done #%d = %+v, want %+v", i, d, want[i])
			}
		}
	})
}

// The tighter of MaxInFlight and the Concurrency applies; a queued call
// waits for a slot, and a limit raised while it waits is handed over at the
// next completion. Its latency counts from its admission, after the queue.
func TestConcurrencyWithQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &movingCap{}
		c.limit.Store(5)
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 1}, Concurrency: c, Queue: Queue{Size: 4}})
		e := l.acquire(key{a: "a", b: "m"}, nil, 0)
		got := l.maxInFlight(e)
		e.mu.Unlock()
		if got != 1 {
			t.Fatalf("cap = %d, want 1 (MaxInFlight is tighter)", got)
		}
		l2 := mustNew(t, Config{Limits: Limits{MaxInFlight: 10}, Concurrency: c, Queue: Queue{Size: 4}})
		c.limit.Store(1)
		m := l2.Wrap(slowModel(time.Second, 1))
		start := time.Now()
		ends := make([]time.Duration, 3)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				if _, err := m.Generate(t.Context(), req("a", 1)); err != nil {
					t.Errorf("call %d: %v", i, err)
				}
				ends[i] = time.Since(start)
			})
			synctest.Wait()
		}
		c.limit.Store(2) // at the first completion, both queued calls start
		wg.Wait()
		if ends[0] != time.Second || ends[1] != 2*time.Second || ends[2] != 2*time.Second {
			t.Errorf("calls ended at %v, want 1s, 2s, 2s", ends)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, d := range c.done {
			if d.latency != time.Second {
				t.Errorf("Done #%d latency %v, want 1s (from admission, after the queue)", i, d.latency)
			}
		}
	})
}

// Done gets the class of every admitted call's outcome, and nothing for a
// call that panicked.
func TestConcurrencyClasses(t *testing.T) {
	c := &movingCap{}
	c.limit.Store(10)
	l := mustNew(t, Config{Concurrency: c})
	fail := &portico.Error{Class: portico.RateLimited, Status: 429}
	l.Wrap(errModel(fail)).Generate(context.Background(), req("a", 1))
	l.Wrap(errModel(context.Canceled)).Generate(context.Background(), req("a", 1))
	func() {
		defer func() { recover() }()
		l.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { panic("boom") })).Generate(context.Background(), req("a", 1))
	}()
	if len(c.done) != 2 || c.done[0].class != portico.RateLimited || c.done[1].class != portico.Canceled {
		t.Errorf("Done = %+v, want RateLimited then Canceled, nothing for the panic", c.done)
	}
	if n := l.inflightOf(req("a", 1)); n != 0 {
		t.Errorf("%d in flight after the calls, want 0", n)
	}
}

// A streamed call's latency, as a Concurrency is told, leaves out the time
// the caller's OnChunk held the stream: 100 ms of the destination before
// each of three chunks, 300 ms of a slow reader after each, 1.2 s in all,
// is 300 ms. The chunks and the reader's error reach the caller as sent.
func TestConcurrencyLeavesOutTheReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &movingCap{}
		c.limit.Store(10)
		l := mustNew(t, Config{Concurrency: c})
		stream := portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
			for _, w := range []string{"a", "b", "c"} {
				time.Sleep(100 * time.Millisecond)
				if err := r.OnChunk(portico.Chunk{Text: w}); err != nil {
					return nil, err
				}
			}
			return &portico.Response{Text: "abc"}, nil
		})
		var got []string
		r := req("a", 1)
		r.OnChunk = func(ch portico.Chunk) error {
			got = append(got, ch.Text)
			time.Sleep(300 * time.Millisecond)
			return nil
		}
		start := time.Now()
		if _, err := l.Wrap(stream).Generate(context.Background(), r); err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("Generate = %v, chunks %v; want the answer, a b c", err, got)
		}
		if el := time.Since(start); len(c.done) != 1 || c.done[0].latency != 300*time.Millisecond || el != 1200*time.Millisecond {
			t.Errorf("Done = %+v after %v; want one call of 300 ms latency after 1.2 s", c.done, el)
		}
		stop := errors.New("caller stops")
		r.OnChunk = func(portico.Chunk) error { return stop }
		if _, err := l.Wrap(stream).Generate(context.Background(), r); !errors.Is(err, stop) {
			t.Errorf("Generate with a failing OnChunk = %v, want its error", err)
		}
	})
}

func TestConcurrencyConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New(Config{}) = nil error, want no limit")
	}
	if _, err := New(Config{Queue: Queue{Size: 2}}); err == nil {
		t.Error("New(Queue without a cap) = nil error, want an error")
	}
	l := mustNew(t, Config{Concurrency: &movingCap{}, Queue: Queue{Size: 2}})
	if err := l.SetLimit(Limits{}); err != nil {
		t.Errorf("SetLimit(Limits{}) with a Concurrency = %v, want nil", err)
	}
}

// A Concurrency is told a call's latency, the calls in flight at its
// admission and its class: a call of 250 ms alone is reported as 250 ms,
// 1 call in flight, OK.
func TestConcurrencyLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
			time.Sleep(250 * time.Millisecond)
			return &portico.Response{Text: "ok"}, nil
		})
		c := &movingCap{}
		c.limit.Store(10)
		if _, err := mustNew(t, Config{Concurrency: c}).Wrap(slow).Generate(context.Background(), req("a", 1)); err != nil {
			t.Fatal(err)
		}
		if want := []doneCall{{250 * time.Millisecond, 1, portico.OK}}; !slices.Equal(c.done, want) {
			t.Errorf("Done = %+v, want %+v", c.done, want)
		}
	})
}
