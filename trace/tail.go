package trace

import (
	"cmp"
	"container/list"
	"context"
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/portico-llm/portico/internal/rules"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TailConfig configures a [TailSampler]. Only Next is required.
type TailConfig struct {
	// Next receives the spans of kept traces (usually a batch span processor
	// around an exporter). Required.
	Next sdktrace.SpanProcessor
	// Threshold is the local-root duration above which a trace is kept, however
	// it ended. Zero means 2 s; negative is an error.
	Threshold time.Duration
	// Ratio is the share, in [0, 1], of the other traces (no error, not slow) to
	// keep, chosen deterministically by trace id like the SDK's
	// TraceIDRatioBased sampler, so every process keeps the same traces. Zero
	// keeps none of them: only failed and slow traces.
	Ratio float64
	// MaxTraces bounds the traces buffered while their local root runs; when
	// full, the oldest is dropped and counted in TailStats.Evicted. Zero means
	// 4096; negative is an error.
	MaxTraces int
	// MaxSpans bounds the spans buffered over all traces, with the same eviction.
	// Zero means 65536; negative is an error.
	MaxSpans int
}

// TailStats counts what a [TailSampler] did, in traces.
type TailStats struct {
	Kept    uint64 // traces forwarded to Next
	Dropped uint64 // traces decided against
	Evicted uint64 // traces dropped undecided because the buffer was full or at Shutdown
}

// TailSampler is an [sdktrace.SpanProcessor] that samples whole traces after
// they end (tail-based sampling, as the OpenTelemetry Collector's
// tail_sampling processor does): it buffers each trace's ended spans until
// its local root (a span without a parent, or with a remote parent) ends,
// then keeps every trace with a span of status Error or a root longer than
// Threshold, and the share Ratio of the others by trace id; kept spans go to
// Next in the order they ended. Spans that end after their root follow the
// decision, remembered for the last MaxTraces traces. Several local roots of
// one trace id are decided by the first to end (see the package
// documentation).
//
// Register it (sdktrace.WithSpanProcessor) under a head sampler that samples
// everything; unsampled spans go to Next untouched. It starts no goroutine,
// never holds its lock while calling Next, and is safe for concurrent use.
type TailSampler struct {
	next      sdktrace.SpanProcessor
	threshold time.Duration
	bound     uint64 // keep the rest when traceID's low 63 bits < bound
	maxTraces int
	maxSpans  int

	mu       sync.Mutex
	pending  map[trace.TraceID]*list.Element // of queue
	queue    list.List                       // *pendingTrace, by first span ended, oldest first
	nSpans   int
	decided  map[trace.TraceID]bool // recent decisions, for late spans
	order    []trace.TraceID        // ring of decided ids, oldest at head
	head     int
	stats    TailStats
	shutdown bool
}

type pendingTrace struct {
	id    trace.TraceID
	spans []sdktrace.ReadOnlySpan
	err   bool
}

// NewTailSampler returns a TailSampler configured by cfg, or an error starting
// with "trace:" when Next is nil or a field is out of range.
func NewTailSampler(cfg TailConfig) (*TailSampler, error) {
	if err := rules.First(
		rules.If(cfg.Next == nil, "trace: TailConfig.Next is nil"),
		rules.If(cfg.Threshold < 0, "trace: TailConfig.Threshold is negative"),
		rules.If(!(cfg.Ratio >= 0 && cfg.Ratio <= 1), "trace: TailConfig.Ratio is outside [0, 1]"),
		rules.If(min(cfg.MaxTraces, cfg.MaxSpans) < 0, "trace: TailConfig.MaxTraces or MaxSpans is negative"),
	); err != nil {
		return nil, err
	}
	s := &TailSampler{next: cfg.Next, threshold: cmp.Or(cfg.Threshold, 2*time.Second),
		maxTraces: cmp.Or(cfg.MaxTraces, 4096), maxSpans: cmp.Or(cfg.MaxSpans, 65536), bound: ratioBound(cfg.Ratio)}
	s.pending = make(map[trace.TraceID]*list.Element)
	s.decided = make(map[trace.TraceID]bool)
	s.order = make([]trace.TraceID, 0, s.maxTraces)
	return s, nil
}

// ratioBound returns the bound on a trace id's low 63 bits below which a
// trace is kept at ratio r (the SDK's TraceIDRatioBased rule).
func ratioBound(r float64) uint64 {
	if r >= 1 {
		return math.MaxUint64
	}
	return uint64(r * (1 << 63))
}

// keepByID reports whether the id falls in the kept share.
func (s *TailSampler) keepByID(id trace.TraceID) bool {
	return binary.BigEndian.Uint64(id[8:16])>>1 < s.bound
}

// OnStart forwards to Next.
func (s *TailSampler) OnStart(parent context.Context, span sdktrace.ReadWriteSpan) {
	s.next.OnStart(parent, span)
}

// OnEnd buffers span, and when it is its trace's local root, decides the trace
// and forwards its spans to Next if kept.
func (s *TailSampler) OnEnd(span sdktrace.ReadOnlySpan) {
	sc := span.SpanContext()
	if !sc.IsSampled() {
		s.next.OnEnd(span)
		return
	}
	p := span.Parent()
	s.mu.Lock()
	keep, pt := s.end(span, sc.TraceID(), span.Status().Code == codes.Error, !p.IsValid() || p.IsRemote())
	s.mu.Unlock()
	switch {
	case !keep:
	case pt == nil:
		s.next.OnEnd(span)
	default:
		for _, sp := range pt.spans {
			s.next.OnEnd(sp)
		}
	}
}

// end buffers span of trace id (isErr: its status is an error; root: it is
// the trace's local root) and reports whether to forward it, alone (pt nil)
// or with its trace's buffered spans (pt). Called with s.mu held.
func (s *TailSampler) end(span sdktrace.ReadOnlySpan, id trace.TraceID, isErr, root bool) (keep bool, pt *pendingTrace) {
	if s.shutdown {
		return false, nil
	}
	if keep, ok := s.decided[id]; ok { // a late span of a decided trace
		return keep, nil
	}
	el := s.pending[id]
	if el == nil && root { // a trace of one span, or whose other spans were all dropped
		keep = s.keep(isErr, span, id)
		s.decide(id, keep)
		return keep, nil
	}
	if el == nil {
		el = s.queue.PushBack(&pendingTrace{id: id})
		s.pending[id] = el
	}
	pt = el.Value.(*pendingTrace)
	pt.spans = append(pt.spans, span)
	pt.err = pt.err || isErr
	s.nSpans++
	if !root {
		s.evict()
		return false, nil
	}
	keep = s.keep(pt.err, span, id)
	s.remove(el)
	s.decide(id, keep)
	return keep, pt
}

// keep is the decision on a trace whose local root is root: kept when it
// failed, when root took longer than the threshold, or when its ID falls in
// the kept share.
func (s *TailSampler) keep(failed bool, root sdktrace.ReadOnlySpan, id trace.TraceID) bool {
	return failed || root.EndTime().Sub(root.StartTime()) > s.threshold || s.keepByID(id)
}

// decide records a decision, forgetting the oldest beyond maxTraces. Called
// with s.mu held.
func (s *TailSampler) decide(id trace.TraceID, keep bool) {
	if keep {
		s.stats.Kept++
	} else {
		s.stats.Dropped++
	}
	if len(s.order) < s.maxTraces {
		s.order = append(s.order, id)
	} else {
		delete(s.decided, s.order[s.head])
		s.order[s.head] = id
		s.head = (s.head + 1) % len(s.order)
	}
	s.decided[id] = keep
}

// evict drops the oldest pending traces while a bound is exceeded. Called
// with s.mu held.
func (s *TailSampler) evict() {
	for s.queue.Len() > 0 && (len(s.pending) > s.maxTraces || s.nSpans > s.maxSpans) {
		s.remove(s.queue.Front())
		s.stats.Evicted++
	}
}

// remove takes el's trace out of the pending set. Called with s.mu held.
func (s *TailSampler) remove(el *list.Element) {
	pt := s.queue.Remove(el).(*pendingTrace)
	delete(s.pending, pt.id)
	s.nSpans -= len(pt.spans)
}

// Stats returns the counts so far.
func (s *TailSampler) Stats() TailStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Pending returns the number of traces and spans buffered awaiting their root.
func (s *TailSampler) Pending() (traces, spans int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending), s.nSpans
}

// ForceFlush forwards to Next. Traces whose root has not ended stay buffered:
// they cannot be decided yet. It returns Next's error.
func (s *TailSampler) ForceFlush(ctx context.Context) error {
	return s.next.ForceFlush(ctx)
}

// Shutdown drops the undecided traces (counted in Evicted), ignores every
// later span, and shuts Next down, returning its error.
func (s *TailSampler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.shutdown {
		s.shutdown = true
		s.stats.Evicted += uint64(len(s.pending))
		s.pending = map[trace.TraceID]*list.Element{}
		s.queue.Init()
		s.nSpans = 0
	}
	s.mu.Unlock()
	return s.next.Shutdown(ctx)
}
