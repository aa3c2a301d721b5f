package hedge_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
)

const ms = time.Millisecond

var req = &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}}

// slow answers text after d.
func slow(text string, d time.Duration) modeltest.Outcome {
	return modeltest.Outcome{Response: modeltest.Answer(text).Response, Latency: d}
}

// ended is a Model that records when and how each call to next ended.
type ended struct {
	next portico.Model
	mu   sync.Mutex
	ends []end
}

type end struct {
	at    time.Duration // since the test's start
	class portico.Class
}

func (e *ended) Generate(ctx context.Context, r *portico.Request) (*portico.Response, error) {
	resp, err := e.next.Generate(ctx, r)
	e.mu.Lock()
	e.ends = append(e.ends, end{time.Since(t0), portico.ClassOf(err)})
	e.mu.Unlock()
	return resp, err
}

var t0 time.Time

// events records the events reported in a context.
type events struct {
	mu sync.Mutex
	ev []portico.Event
}

func (o *events) Observe(_ context.Context, e portico.Event) {
	o.mu.Lock()
	o.ev = append(o.ev, e)
	o.mu.Unlock()
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  hedge.Config
		name string
	}{
		{hedge.Config{Delay: -ms}, "Delay"},
		{hedge.Config{MaxInFlight: -1}, "MaxInFlight"},
		{hedge.Config{Percentile: 1}, "Percentile"},
		{hedge.Config{Percentile: -0.5}, "Percentile"},
	} {
		_, err := hedge.New(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "hedge: ") || !strings.Contains(err.Error(), "Config."+c.name) {
			t.Errorf("New(%+v) = %v, want an error starting with \"hedge: \" naming Config.%s", c.cfg, err, c.name)
		}
	}
}

// A request that may not be sent twice (NoAmbiguousRetry), and any request
// with MaxInFlight 1,
// goes to next once, however slow.
func TestNotHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			cfg hedge.Config
			req *portico.Request
		}{
			{hedge.Config{Delay: 100 * ms}, &portico.Request{Model: "m", NoAmbiguousRetry: true}},
			{hedge.Config{Delay: 100 * ms, MaxInFlight: 1}, req},
		} {
			fake := modeltest.NewFake(slow("late", 10*time.Second))
			if _, err := hedge.MustNew(c.cfg).Wrap(fake).Generate(context.Background(), c.req); err != nil || fake.Count() != 1 {
				t.Errorf("%+v: %d calls, %v, want 1 call and an answer", c.cfg, fake.Count(), err)
			}
		}
	})
}

// After the delay a hedge goes to the same Model; the first answer wins and
// the other attempt is canceled at that moment, and Generate returns only
// once it ended.
func TestHedgeWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 = time.Now()
		fake := modeltest.NewFake(slow("first", 10*time.Second), slow("hedge", time.Second))
		e := &ended{next: fake}
		obs := &events{}
		b := &modeltest.Budget{Tokens: 5}
		m := hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: b}).Wrap(e)
		r := req.Clone()
		r.Identity.ClientKey = "alice"
		resp, err := m.Generate(portico.ContextWithObserver(context.Background(), obs), r)
		if err != nil || resp.Text != "hedge" {
			t.Fatalf("Generate = %v, %v, want the hedge's answer", resp, err)
		}
		if took := time.Since(t0); took != 1100*ms {
			t.Errorf("took %v, want 1.1s (100 ms delay + 1 s)", took)
		}
		want := []end{{1100 * ms, portico.OK}, {1100 * ms, portico.Canceled}}
		if len(e.ends) != 2 || e.ends[0] != want[0] || e.ends[1] != want[1] {
			t.Errorf("attempts ended %+v, want %+v (the first canceled when the hedge answered)", e.ends, want)
		}
		if tk := b.Taken(); len(tk) != 1 || tk[0] != "m/alice" {
			t.Errorf("budget charged %v, want one token of m/alice", tk)
		}
		if len(obs.ev) != 1 || obs.ev[0] != (portico.Event{Kind: portico.EventHedge, Route: "m", Attempt: 1, Delay: 100 * ms, Reason: "sent"}) {
			t.Errorf("events %+v, want one hedge sent after 100ms", obs.ev)
		}
	})
}

// When the first attempt answers after the hedge was sent, it wins.
func TestFirstWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 = time.Now()
		fake := modeltest.NewFake(slow("first", 150*ms), slow("hedge", time.Second))
		e := &ended{next: fake}
		resp, err := hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(e).Generate(context.Background(), req)
		if err != nil || resp.Text != "first" || time.Since(t0) != 150*ms {
			t.Fatalf("Generate = %v, %v after %v, want the first answer after 150ms", resp, err, time.Since(t0))
		}
		if len(e.ends) != 2 || e.ends[1] != (end{150 * ms, portico.Canceled}) {
			t.Errorf("attempts ended %+v, want the hedge canceled at 150ms", e.ends)
		}
	})
}

// An empty budget skips the hedge and leaves the running attempt alone.
func TestBudgetSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 = time.Now()
		fake := modeltest.NewFake(slow("first", 10*time.Second))
		obs := &events{}
		m := hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: &modeltest.Budget{}}).Wrap(fake)
		resp, err := m.Generate(portico.ContextWithObserver(context.Background(), obs), req)
		if err != nil || resp.Text != "first" || time.Since(t0) != 10*time.Second || fake.Count() != 1 {
			t.Fatalf("Generate = %v, %v after %v with %d calls, want the first answer after 10s, one call", resp, err, time.Since(t0), fake.Count())
		}
		if len(obs.ev) != 1 || obs.ev[0] != (portico.Event{Kind: portico.EventHedge, Route: "m", Reason: "budget"}) {
			t.Errorf("events %+v, want one hedge refused by the budget", obs.ev)
		}
	})
}

// MaxInFlight bounds the attempts in flight and in all: with 3, hedges go at
// 100 ms and 200 ms, and no more.
func TestMaxInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 = time.Now()
		fake := modeltest.NewFake(slow("a", 10*time.Second), slow("b", 10*time.Second), slow("c", 950*ms))
		resp, err := hedge.MustNew(hedge.Config{Delay: 100 * ms, MaxInFlight: 3}).Wrap(fake).Generate(context.Background(), req)
		if err != nil || resp.Text != "c" || time.Since(t0) != 1150*ms || fake.Count() != 3 {
			t.Errorf("Generate = %v, %v after %v with %d calls, want c after 1.15s, 3 calls", resp, err, time.Since(t0), fake.Count())
		}
	})
}

// A failure while a hedge runs waits for the hedge; one that another
// attempt would repeat ends the call at once; one before the delay ends it
// with no hedge.
func TestFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		first modeltest.Outcome
		text  string
		class portico.Class
		took  time.Duration
		calls int
	}{
		{"transient waits for the hedge", modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 150 * ms}, "hedge", portico.OK, 400 * ms, 2},
		{"permanent stops", modeltest.Outcome{Err: &portico.Error{Class: portico.Permanent, Status: 400, Err: modeltest.ErrInjected}, Latency: 150 * ms}, "", portico.Permanent, 150 * ms, 2},
		{"refused answer waits for the hedge", modeltest.Outcome{Err: &portico.Error{Class: portico.InvalidResponse, Err: portico.ErrAnswerRefused}, Latency: 150 * ms}, "hedge", portico.OK, 400 * ms, 2},
		// Before portico.FaultOf, a cut of the caller's deadline waited for
		// the hedge, which the same deadline cuts.
		{"caller's deadline cut stops", modeltest.Outcome{Err: &portico.Error{Class: portico.Ambiguous, Err: portico.DeadlineCut(portico.ErrLayerTimeout)}, Latency: 150 * ms}, "", portico.Ambiguous, 150 * ms, 2},
		{"before the delay", modeltest.Outcome{Err: modeltest.StatusError(503), Latency: 50 * ms}, "", portico.Transient, 50 * ms, 1},
	} {
		synctest.Test(t, func(t *testing.T) {
			t0 = time.Now()
			fake := modeltest.NewFake(c.first, slow("hedge", 300*ms))
			resp, err := hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(fake).Generate(context.Background(), req)
			text := ""
			if resp != nil {
				text = resp.Text
			}
			if text != c.text || portico.ClassOf(err) != c.class || time.Since(t0) != c.took || fake.Count() != c.calls {
				t.Errorf("%s: Generate = %q, %v after %v with %d calls, want %q, class %v, after %v, %d calls",
					c.name, text, err, time.Since(t0), fake.Count(), c.text, c.class, c.took, c.calls)
			}
		})
	}
}

// Streaming: the first attempt to deliver a chunk wins, the other is
// canceled at that moment, and the caller sees the winner's chunks only.
func TestStreamFirstChunkWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 = time.Now()
		first := modeltest.Outcome{Response: modeltest.Answer("one two three").Response, TTFT: time.Second, ChunkGap: 10 * ms}
		second := modeltest.Outcome{Response: modeltest.Answer("uno dos tres").Response, TTFT: 200 * ms, ChunkGap: time.Second}
		fake := modeltest.NewFake(first, second)
		e := &ended{next: fake}
		var got []string
		r := req.Clone()
		r.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
		resp, err := hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(e).Generate(context.Background(), r)
		if err != nil || resp.Text != "uno dos tres" || strings.Join(got, "") != "uno dos tres" {
			t.Fatalf("Generate = %v, %v, chunks %q, want the hedge's answer and only its chunks", resp, err, got)
		}
		// The hedge's first chunk at 300 ms cancels the first attempt then;
		// the hedge ends at 2.3 s.
		want := []end{{300 * ms, portico.Canceled}, {2300 * ms, portico.OK}}
		if len(e.ends) != 2 || e.ends[0] != want[0] || e.ends[1] != want[1] {
			t.Errorf("attempts ended %+v, want %+v", e.ends, want)
		}
	})
}

// A streamed winner's failure after its first chunk is the call's error:
// nothing is hedged once a chunk reached the caller.
func TestStreamNoHedgeAfterChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cut := modeltest.Outcome{Response: modeltest.Answer("a b c").Response, TTFT: 10 * ms, ChunkGap: 200 * ms,
			Err: modeltest.StatusError(502)}
		fake := modeltest.NewFake(cut, modeltest.Answer("fine"))
		var got []string
		r := req.Clone()
		r.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
		_, err := hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(fake).Generate(context.Background(), r)
		if portico.ClassOf(err) != portico.Transient || fake.Count() != 1 || strings.Join(got, "") != "a b c" {
			t.Errorf("Generate = %v with %d calls, chunks %q, want the 502 after all three chunks and one call", err, fake.Count(), got)
		}
	})
}

// A panic in an attempt goes on in the caller's goroutine once the other
// attempt ended.
func TestPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		var mu sync.Mutex
		m := portico.ModelFunc(func(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
			mu.Lock()
			n++
			k := n
			mu.Unlock()
			if k == 1 {
				time.Sleep(200 * ms)
				panic("boom")
			}
			<-ctx.Done()
			return nil, portico.FromContext(ctx)
		})
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want boom", p)
			}
		}()
		hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(m).Generate(context.Background(), req)
		t.Error("Generate returned, want its panic")
	})
}

// The percentile: no hedge before 50 answers; then, with 95% of them of
// 100 ms and 5% of 1 s, a hedge after the p95's bucket bound, 100.66 ms,
// for each slow call: of calls 50 to 99, the slow 59, 79 and 99, each
// hedged by the next call, which answers first.
func TestPercentileDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := modeltest.NewFakeFunc(func(n int, _ *portico.Request) modeltest.Outcome {
			if n%20 == 19 {
				return slow("slow", time.Second)
			}
			return slow("fast", 100*ms)
		})
		obs := &events{}
		m := hedge.MustNew(hedge.Config{}).Wrap(fake)
		ctx := portico.ContextWithObserver(context.Background(), obs)
		for range 50 {
			m.Generate(ctx, req)
		}
		if len(obs.ev) != 0 || fake.Count() != 50 {
			t.Fatalf("while learning: %d events, %d calls, want none and 50", len(obs.ev), fake.Count())
		}
		for range 50 {
			if resp, err := m.Generate(ctx, req); err != nil || resp.Text != "fast" {
				t.Fatalf("Generate = %v, %v, want fast", resp, err)
			}
		}
		if len(obs.ev) != 3 || fake.Count() != 103 {
			t.Fatalf("%d hedges and %d calls for 100 requests, want 3 and 103", len(obs.ev), fake.Count())
		}
		for _, e := range obs.ev {
			if e.Delay != 100663296 {
				t.Errorf("hedge after %v, want 100.663296ms", e.Delay)
			}
		}
	})
}

// The hedging layer keeps the Model contract (every request of the suite may
// be repeated, so each is raced).
func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
		return hedge.MustNew(hedge.Config{Delay: 5 * ms, MaxInFlight: 3}).Wrap(base)
	})
}

// Races nest (a group's race over routes that hedge themselves): an inner
// attempt whose first chunk comes after another outer attempt won wins its
// inner race, is refused by the outer one, and both races end.
func TestNested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		m := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			mu.Lock()
			k := n
			n++
			mu.Unlock()
			if k == 0 { // deaf to its context: its chunk comes after the outer race's winner
				time.Sleep(300 * ms)
				if err := r.OnChunk(portico.Chunk{Text: "late"}); err != nil {
					return nil, err
				}
				return &portico.Response{Text: "late"}, nil
			}
			select {
			case <-time.After(time.Duration(k) * 100 * ms):
			case <-ctx.Done():
				return nil, portico.FromContext(ctx)
			}
			if err := r.OnChunk(portico.Chunk{Text: "ok"}); err != nil {
				return nil, err
			}
			return &portico.Response{Text: "ok"}, nil
		})
		inner := hedge.MustNew(hedge.Config{Delay: time.Second}) // the inner races never hedge
		outer := hedge.MustNew(hedge.Config{Delay: 50 * ms})
		var got []string
		r := req.Clone()
		r.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
		start := time.Now()
		resp, err := outer.Wrap(inner.Wrap(m)).Generate(context.Background(), r)
		if err != nil || resp.Text != "ok" || strings.Join(got, "") != "ok" || time.Since(start) != 300*ms {
			t.Errorf("Generate = %v, %v, chunks %q after %v, want ok and its chunk only, after 300ms (the deaf call's end)",
				resp, err, got, time.Since(start))
		}
	})
}

// A hedge due at the very instant the attempt answers: whichever of the
// two the race sees first, the answer is the attempt's, at once, and a
// hedge sent is canceled then. Many bubbles, to see both orders.
func TestHedgeDueAsTheAttemptAnswers(t *testing.T) {
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			t0 = time.Now()
			fake := modeltest.NewFake(slow("first", 100*ms), slow("hedge", time.Second))
			e := &ended{next: fake}
			resp, err := hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(e).Generate(context.Background(), req)
			if err != nil || resp.Text != "first" || time.Since(t0) != 100*ms {
				t.Fatalf("Generate = %v, %v after %v, want the first answer after 100ms", resp, err, time.Since(t0))
			}
			if len(e.ends) == 2 && e.ends[1] != (end{100 * ms, portico.Canceled}) {
				t.Errorf("attempts ended %+v, want the hedge canceled at 100ms", e.ends)
			}
		})
	}
}

// A hedge due at the very instant the attempt fails with an error that
// stops the race: when the race sees the failure first, no hedge is sent
// nor charged (before, the timer, fired as the attempt ended, sent one
// every time); when it sees the hedge first, the hedge is sent, and its
// token kept. Many bubbles, to see both orders.
func TestNoHedgeSentAfterAStoppingFailure(t *testing.T) {
	unsent := 0 // permanent errors with no hedge sent
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			var sent atomic.Int32
			m := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
				if r.Hedge {
					sent.Add(1)
					return &portico.Response{Text: "hedge"}, nil
				}
				time.Sleep(100 * ms)
				return nil, &portico.Error{Class: portico.Permanent, Status: 400}
			})
			b := &modeltest.Budget{Tokens: -1}
			resp, err := hedge.MustNew(hedge.Config{Delay: 100 * ms, Budget: b}).Wrap(m).Generate(context.Background(), req)
			won := err == nil && resp.Text == "hedge"
			if !won && (resp != nil || portico.ClassOf(err) != portico.Permanent) {
				t.Fatalf("Generate = %v, %v; want the attempt's permanent error or the hedge's answer", resp, err)
			}
			if n, kept := sent.Load(), len(b.Taken())-b.Refunded(); int(n) != kept {
				t.Errorf("%d hedges sent, %d tokens kept; want one kept per hedge sent", n, kept)
			}
			if !won && sent.Load() == 0 {
				unsent++
			}
		})
	}
	if unsent == 0 {
		t.Errorf("in 200 races a hedge was sent after every permanent error; want none sent when the failure came first")
	}
}

// A panic in the attempt before the hedge is due goes on at once, and no
// hedge follows.
func TestPanicBeforeTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 = time.Now()
		fake := modeltest.NewFake(slow("late", 50*ms))
		m := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			if fake.Count() == 0 {
				fake.Generate(ctx, r) // counted, then
				panic("boom")
			}
			return fake.Generate(ctx, r)
		})
		defer func() {
			p := recover()
			time.Sleep(time.Second) // a hedge would be sent meanwhile
			if p != "boom" || fake.Count() != 1 {
				t.Errorf("recovered %v after %d calls, want boom after 1", p, fake.Count())
			}
		}()
		hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(m).Generate(context.Background(), req)
		t.Error("Generate returned, want its panic")
	})
}

// With a Config.Cost of 0.1 an attempt, a request whose Contract allows
// 0.25 gets one hedge of the two MaxInFlight 3 would send (three attempts
// may cost 0.3), and one that allows 0.15 none; each refusal is an event,
// and the budget is not charged for it.
func TestMaxCost(t *testing.T) {
	for _, c := range []struct {
		maxCost float64
		calls   int
		text    string
		took    time.Duration
	}{{0.25, 2, "b", 1100 * ms}, {0.15, 1, "a", 10 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			t0 = time.Now()
			fake := modeltest.NewFake(slow("a", 10*time.Second), slow("b", time.Second), slow("c", 10*ms))
			b := &modeltest.Budget{Tokens: 5}
			h := hedge.MustNew(hedge.Config{Delay: 100 * ms, MaxInFlight: 3, Budget: b,
				Cost: func(*portico.Request) float64 { return 0.1 }})
			r := req.Clone()
			r.Contract = &portico.Contract{MaxCost: c.maxCost}
			obs := &events{}
			resp, err := h.Wrap(fake).Generate(portico.ContextWithObserver(context.Background(), obs), r)
			if err != nil || resp.Text != c.text || time.Since(t0) != c.took || fake.Count() != c.calls {
				t.Fatalf("MaxCost %v: Generate = %v, %v after %v with %d calls, want %s after %v, %d calls",
					c.maxCost, resp, err, time.Since(t0), fake.Count(), c.text, c.took, c.calls)
			}
			refused := portico.Event{Kind: portico.EventHedge, Route: "m", Reason: "max cost"}
			if last := obs.ev[len(obs.ev)-1]; last != refused || len(obs.ev) != c.calls || len(b.Taken()) != c.calls-1 {
				t.Errorf("MaxCost %v: events %+v, tokens %v; want %d sent, then one refused for its cost, %d tokens",
					c.maxCost, obs.ev, b.Taken(), c.calls-1, c.calls-1)
			}
		})
	}
}

// A request that is itself a hedge (portico.Request.Hedge) is not hedged
// again: the extra load MaxInFlight bounds would multiply.
func TestHedgeNotHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 = time.Now()
		fake := modeltest.NewFake(slow("a", time.Second), slow("b", 10*ms))
		h := hedge.MustNew(hedge.Config{Delay: 100 * ms})
		if h.Applies(hedge.AsHedge(req)) || !h.Applies(req) {
			t.Errorf("Applies(hedge) = %v, Applies(request) = %v; want false, true", h.Applies(hedge.AsHedge(req)), h.Applies(req))
		}
		resp, err := h.Wrap(fake).Generate(context.Background(), hedge.AsHedge(req))
		if err != nil || resp.Text != "a" || time.Since(t0) != time.Second || fake.Count() != 1 {
			t.Errorf("Generate(hedge) = %v, %v after %v with %d calls, want a after 1s, one call", resp, err, time.Since(t0), fake.Count())
		}
	})
}

// TestManyRaces: races at once share nothing but their Hedger: each of 200
// is hedged after its own delay, and gets its hedge's answer.
func TestManyRaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		m := portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			if !r.Hedge { // the first attempt waits to be canceled
				<-ctx.Done()
				return nil, portico.FromContext(ctx)
			}
			time.Sleep(10 * ms)
			return &portico.Response{Text: "hedge"}, nil
		})
		h := hedge.MustNew(hedge.Config{Delay: 100 * ms}).Wrap(m)
		t0 := time.Now()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				resp, err := h.Generate(context.Background(), req)
				if took := time.Since(t0); err != nil || resp.Text != "hedge" || took != 110*ms {
					t.Errorf("Generate = %v, %v after %v, want the hedge's answer after 110ms", resp, err, took)
				}
			})
		}
		wg.Wait()
	})
}
