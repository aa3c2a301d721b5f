package trace

import (
	"context"
	"encoding/binary"
	"math/bits"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// seqIDs gives trace n (from 0) the id whose low 63 bits are
// floor(n * 2^63 / 100): at ratio r exactly the traces n < 100r fall in the
// kept share. Span ids count up from 1.
type seqIDs struct {
	mu    sync.Mutex
	trace uint64
	span  uint64
}

func (g *seqIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	n := g.trace
	g.trace++
	g.mu.Unlock()
	hi, lo := bits.Mul64(n, 1<<63)
	q, _ := bits.Div64(hi, lo, 100)
	var tid trace.TraceID
	tid[0] = 1
	binary.BigEndian.PutUint64(tid[8:], q<<1)
	return tid, g.NewSpanID(ctx, tid)
}

func (g *seqIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.span++
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], g.span)
	return sid
}

func newTail(t *testing.T, cfg TailConfig) (*TailSampler, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	cfg.Next = rec
	ts, err := NewTailSampler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ts), sdktrace.WithIDGenerator(&seqIDs{}))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return ts, rec, tp
}

// TestTailSamplerKeeps sends 100 requests through both layers: every tenth
// (n%10 == 3) fails, every tenth (n%10 == 7) takes 3 s, the rest 10 ms. With
// a 2 s threshold and ratio 0.25 it must keep the 10 failed, the 10 slow, and
// the 20 others with n < 25, each with both its spans, and nothing else.
func TestTailSamplerKeeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts, rec, tp := newTail(t, TailConfig{Threshold: 2 * time.Second, Ratio: 0.25})
		tr := mustNew(t, Config{TracerProvider: tp})
		n := 0
		inner := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			switch n % 10 {
			case 3:
				time.Sleep(10 * time.Millisecond)
				return nil, &portico.Error{Class: portico.Transient}
			case 7:
				time.Sleep(3 * time.Second)
			default:
				time.Sleep(10 * time.Millisecond)
			}
			return &portico.Response{FinishReason: portico.FinishStop}, nil
		})
		m := tr.Wrap(tr.WrapAttempt(inner))
		for n = 0; n < 100; n++ {
			_, _ = m.Generate(context.Background(), &portico.Request{Model: "m"})
		}
		want := map[uint64]bool{}
		for i := uint64(0); i < 100; i++ {
			if i%10 == 3 || i%10 == 7 || i < 25 {
				want[i] = true
			}
		}
		if len(want) != 40 {
			t.Fatalf("test setup: %d wanted traces, want 40", len(want))
		}
		got := map[uint64]int{}
		for _, sp := range rec.Ended() {
			tid := sp.SpanContext().TraceID()
			low := binary.BigEndian.Uint64(tid[8:]) >> 1
			// invert floor(n * 2^63 / 100): n = ceil(low * 100 / 2^63)
			hi, lo := bits.Mul64(low, 100)
			q, r := bits.Div64(hi, lo, 1<<63)
			if r != 0 {
				q++
			}
			got[q]++
		}
		for i := range want {
			if got[i] != 2 {
				t.Errorf("trace %d: %d spans kept, want 2", i, got[i])
			}
		}
		for i, c := range got {
			if !want[i] {
				t.Errorf("trace %d: %d spans kept, want it dropped", i, c)
			}
		}
		if st := ts.Stats(); st != (TailStats{Kept: 40, Dropped: 60}) {
			t.Errorf("Stats() = %+v, want {Kept:40 Dropped:60 Evicted:0}", st)
		}
		if tr, sp := ts.Pending(); tr != 0 || sp != 0 {
			t.Errorf("Pending() = %d, %d, want 0, 0", tr, sp)
		}
	})
}

// TestTailSamplerBounds checks eviction of the oldest undecided trace when
// MaxTraces or MaxSpans is exceeded, late spans of decided traces, and
// Shutdown.
func TestTailSamplerBounds(t *testing.T) {
	ts, rec, tp := newTail(t, TailConfig{Ratio: 1, MaxTraces: 2, MaxSpans: 3})
	tracer := tp.Tracer("test")
	ctx := context.Background()
	var roots []trace.Span
	for range 3 { // three traces, each with one ended child, roots still open
		rctx, root := tracer.Start(ctx, "root")
		_, child := tracer.Start(rctx, "child")
		child.End()
		roots = append(roots, root)
	}
	if st := ts.Stats(); st.Evicted != 1 {
		t.Fatalf("after 3 open traces with MaxTraces 2: Evicted = %d, want 1", st.Evicted)
	}
	if tr, sp := ts.Pending(); tr != 2 || sp != 2 {
		t.Fatalf("Pending() = %d, %d, want 2, 2", tr, sp)
	}
	// Two more children of trace 3 overflow MaxSpans 3: trace 2 goes.
	rctx := trace.ContextWithSpan(ctx, roots[2])
	for range 2 {
		_, c := tracer.Start(rctx, "child")
		c.End()
	}
	if st := ts.Stats(); st.Evicted != 2 {
		t.Fatalf("after overflowing MaxSpans: Evicted = %d, want 2", st.Evicted)
	}
	roots[2].End() // decided: kept with its 3 children
	if n := len(rec.Ended()); n != 4 {
		t.Fatalf("after trace 3's root ended: %d spans forwarded, want 4", n)
	}
	roots[0].End() // evicted trace: its root alone is decided
	if n := len(rec.Ended()); n != 5 {
		t.Fatalf("after trace 1's root ended: %d spans forwarded, want 5", n)
	}
	_, late := tracer.Start(rctx, "late")
	late.End() // a late span of kept trace 3 is forwarded
	if n := len(rec.Ended()); n != 6 {
		t.Fatalf("after a late span: %d spans forwarded, want 6", n)
	}
	// After Shutdown every span is ignored, trace 2's root included.
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	roots[1].End()
	if n := len(rec.Ended()); n != 6 {
		t.Errorf("after Shutdown: %d spans forwarded, want still 6", n)
	}
}

// TestTailSamplerErrorInChild checks that an error in a child span alone
// keeps the trace at ratio 0.
func TestTailSamplerErrorInChild(t *testing.T) {
	_, rec, tp := newTail(t, TailConfig{Ratio: 0})
	tracer := tp.Tracer("test")
	for i := range 2 {
		rctx, root := tracer.Start(context.Background(), "root")
		_, child := tracer.Start(rctx, "child")
		if i == 1 {
			child.SetStatus(codes.Error, "boom")
		}
		child.End()
		root.End()
	}
	if n := len(rec.Ended()); n != 2 {
		t.Fatalf("%d spans forwarded, want the 2 of the trace whose child failed", n)
	}
	if rec.Ended()[0].Status().Code != codes.Error {
		t.Errorf("forwarded child status = %v, want Error", rec.Ended()[0].Status())
	}
}

func TestNewTailSamplerErrors(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	for _, cfg := range []TailConfig{
		{},
		{Next: rec, Threshold: -1},
		{Next: rec, Ratio: 1.5},
		{Next: rec, Ratio: -0.1},
		{Next: rec, MaxTraces: -1},
		{Next: rec, MaxSpans: -1},
	} {
		if _, err := NewTailSampler(cfg); err == nil {
			t.Errorf("NewTailSampler(%+v) = nil error, want one", cfg)
		}
	}
}

// TestTailSamplerWithBatcher puts the SDK's batch processor (which runs a
// goroutine) behind the sampler: ForceFlush exports the kept trace, and
// Shutdown through the provider stops the batcher (goleak checks).
func TestTailSamplerWithBatcher(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	ts, err := NewTailSampler(TailConfig{Next: sdktrace.NewBatchSpanProcessor(exp)})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ts))
	tracer := tp.Tracer("test")
	for _, fail := range []bool{false, true} {
		rctx, root := tracer.Start(context.Background(), "root")
		_, child := tracer.Start(rctx, "child")
		child.End()
		if fail {
			root.SetStatus(codes.Error, "failed")
		}
		root.End()
	}
	if err := ts.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("exported %d spans, want the 2 of the failed trace", n)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
