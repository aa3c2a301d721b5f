package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/trace"
)

// The chaos drill (-chaos) injects every fault the fakes know on a share of
// the calls of every route, at each of chaosRates in turn, and checks after
// each run the invariants the stack promises (invariants.violations): the
// Principles of Chaos Engineering's "inject real events, compare with the
// steady state, automate".
var chaosRates = []float64{0.10, 0.30, 0.50}

// canary is in every prompt of a chaos run; no span, log record or error
// string may carry it.
const canary = "canary-5a1f0c"

// chaosKind is one fault of the drill's menu, as each route's fake sends it.
type chaosKind struct {
	name  string
	fault func(route int) fakeopenai.Fault
}

// chaosKinds are every fault kind of the fakes (fakeopenai's FaultKind
// constants, the same type in every fake), each status as its provider sends
// it: a 429 with OpenAI's retry-after-ms, Anthropic's retry-after or
// Gemini's RetryInfo; 5xx; overload (Anthropic's 529 overloaded_error, a 503
// elsewhere); stalls before and after the first token, which only the
// stack's timeouts end; cuts mid-stream; malformed bodies; an error event in
// a 200 stream; connection resets; a truncated answer; a prompt over the
// context window.
var chaosKinds = []chaosKind{
	{"429 with Retry-After", func(route int) fakeopenai.Fault {
		f := fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429}
		switch route {
		case dial.OpenAI:
			f.RetryAfterMsHeader = 100 * time.Millisecond
		case dial.Anthropic:
			f.RetryAfter = time.Second // beyond MaxRetryAfter: the call moves on
		default:
			f.RetryAfter = 200 * time.Millisecond
		}
		return f
	}},
	{"500", status(500)},
	{"502", status(502)},
	{"overload", func(route int) fakeopenai.Fault {
		if route == dial.Anthropic {
			return fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 529}
		}
		return fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503}
	}},
	{"stall before the first token", kind(fakeopenai.FaultStallBeforeHeaders, 0)},
	{"stall after the first token", kind(fakeopenai.FaultStallMidStream, 1)},
	{"cut mid-stream", kind(fakeopenai.FaultDisconnect, 2)},
	{"malformed body", kind(fakeopenai.FaultMalformed, 0)},
	{"error event in a 200 stream", kind(fakeopenai.FaultStreamError, 0)},
	{"connection reset", kind(fakeopenai.FaultDisconnect, 0)},
	{"truncated answer", kind(fakeopenai.FaultTruncate, 2)},
	{"context overflow", kind(fakeopenai.FaultContextLength, 0)},
}

func status(code int) func(int) fakeopenai.Fault {
	return func(int) fakeopenai.Fault { return fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: code} }
}

func kind(k fakeopenai.FaultKind, afterChunks int) func(int) fakeopenai.Fault {
	return func(int) fakeopenai.Fault { return fakeopenai.Fault{Kind: k, AfterChunks: afterChunks} }
}

// chaosFaults is route's menu with every kind on an equal share of rate.
func chaosFaults(rate float64, route int) []fakeopenai.Fault {
	fs := make([]fakeopenai.Fault, len(chaosKinds))
	for i, k := range chaosKinds {
		fs[i] = k.fault(route)
		fs[i].Fraction = rate / float64(len(chaosKinds))
	}
	return fs
}

// chaosAbout says what a fake answers with faults.
func chaosAbout(faults []fakeopenai.Fault) string {
	rate := 0.0
	for _, f := range faults {
		rate += f.Fraction
	}
	return fmt.Sprintf("%d kinds of fault on %.0f%% of calls", len(faults), 100*rate)
}

// watch records what the stack lets out during a chaos run: every span (an
// in-memory OpenTelemetry exporter) and every log record (a text handler at
// debug level over a buffer, which the standard logger, where genai's SDK
// writes a stream's read errors, also writes to during the run), to look
// for the canary in them.
type watch struct {
	prevLog  io.Writer // the standard logger's output before the run
	spans    *tracetest.SpanRecorder
	provider *sdktrace.TracerProvider
	tracer   *trace.Tracer
	logger   *slog.Logger
	mu       sync.Mutex
	logs     strings.Builder
}

func newWatch() (*watch, error) {
	w := &watch{spans: tracetest.NewSpanRecorder()}
	w.provider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans))
	w.logger = slog.New(slog.NewTextHandler(lockedWriter{w}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var err error
	if w.tracer, err = trace.New(trace.Config{TracerProvider: w.provider, Logger: w.logger}); err != nil {
		return nil, err
	}
	w.prevLog = log.Writer()
	log.SetOutput(lockedWriter{w})
	return w, nil
}

type lockedWriter struct{ w *watch }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.w.logs.Write(p)
}

// leaks counts the spans and log records seen, and those that carry s.
func (w *watch) leaks(s string) (spans, spanLeaks, records, recordLeaks int) {
	for _, sp := range w.spans.Ended() {
		spans++
		if spanCarries(sp, s) {
			spanLeaks++
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for line := range strings.Lines(w.logs.String()) {
		records++
		if strings.Contains(line, s) {
			recordLeaks++
		}
	}
	return spans, spanLeaks, records, recordLeaks
}

// spanCarries reports whether any string of sp (name, attributes, events,
// status, links) contains s.
func spanCarries(sp sdktrace.ReadOnlySpan, s string) bool {
	in := func(kvs []attribute.KeyValue) bool {
		for _, kv := range kvs {
			if strings.Contains(string(kv.Key), s) || strings.Contains(kv.Value.String(), s) {
				return true
			}
		}
		return false
	}
	if strings.Contains(sp.Name(), s) || strings.Contains(sp.Status().Description, s) || in(sp.Attributes()) {
		return true
	}
	for _, e := range sp.Events() {
		if strings.Contains(e.Name, s) || in(e.Attributes) {
			return true
		}
	}
	for _, l := range sp.Links() {
		if in(l.Attributes) {
			return true
		}
	}
	return false
}

// close shuts the tracer provider down and drops what was recorded.
func (w *watch) close() {
	log.SetOutput(w.prevLog)
	_ = w.provider.Shutdown(context.Background())
	w.spans.Reset()
	w.mu.Lock()
	w.logs = strings.Builder{}
	w.mu.Unlock()
}

// effects runs the tool calls of a chaos run's answers through package
// effect, counting how many times each execution key's side effect ran.
type effects struct {
	runner *effect.Runner
	mu     sync.Mutex
	runs   map[effect.Key]int
	dos    int // Runner.Do calls
	failed int // Do calls that returned an error
}

func newEffects(logger *slog.Logger) (*effects, error) {
	r, err := effect.New(effect.Config{Logger: logger})
	return &effects{runner: r, runs: map[effect.Key]int{}}, err
}

// do runs the side effects resp asks for, under the request's operation.
func (e *effects) do(ctx context.Context, req *portico.Request, resp *portico.Response) {
	for _, call := range resp.ToolCalls {
		key, err := effect.KeyOf(req.Identity.OperationID, call)
		if err == nil {
			_, err = e.runner.Do(ctx, key, func(context.Context) ([]byte, error) {
				e.mu.Lock()
				e.runs[key]++
				e.mu.Unlock()
				return []byte(`{"refunded":true}`), nil
			})
		}
		e.mu.Lock()
		e.dos++
		if err != nil {
			e.failed++
		}
		e.mu.Unlock()
	}
}

// refundTool is the tool of a chaos run's tool requests. Its one argument
// can only be the operation's order, so every route asks for the same call
// and a replayed step has the same execution key.
func refundTool(order string) portico.Tool {
	return portico.Tool{Name: "refund_order", Description: "Refund an order.",
		Parameters: []byte(`{"type":"object","properties":{"order":{"type":"string","enum":["` + order + `"]}},"required":["order"]}`)}
}

// usage is what the process holds: goroutines (as goleak sees them), open
// file descriptors (-1 where /proc/self/fd is not there) and the heap after
// a collection.
type usage struct {
	goroutines goleak.Option
	fds        int
	heap       uint64
}

func measure() usage {
	// Twice: objects in sync.Pools survive one collection in the pools'
	// victim caches.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{goroutines: goleak.IgnoreCurrent(), fds: openFDs(), heap: ms.HeapAlloc}
}

func openFDs() int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(es)
}

// invariants are a chaos run's figures and what they must satisfy.
type invariants struct {
	rate                                float64
	requests, accepted, unclassified    int
	failed                              map[portico.Class]int
	attempts, calls, bound              [dial.N]int
	lateStarts                          int           // attempts started at or after their deadline
	minLeft                             time.Duration // least deadline left when an attempt started
	overshoot                           time.Duration // the latest a call returned relative to its deadline
	effectKeys, effectRuns, effectTwice int
	effectDos                           int
	goroutinesLeft                      error // goleak.Find's report; nil when none is left
	fdsLeft                             int
	heapLeft                            int64 // bytes
	spans, spanLeaks                    int
	records, recordLeaks, errorLeaks    int
	faults                              map[fakeopenai.FaultKind]int // injected, by kind
}

// check reads a run's invariants off its results, its watch and the process
// before and after it.
func check(rate float64, res *results, w *watch, before usage) *invariants {
	v := &invariants{rate: rate, requests: res.requests, accepted: res.accepted, unclassified: res.unclassified,
		failed: res.failed, overshoot: res.overshoot, errorLeaks: res.errorLeaks, minLeft: requestDeadline, faults: res.faults}
	for i := range res.routes {
		rs := &res.routes[i]
		v.attempts[i], v.calls[i] = rs.attempts, rs.calls
		v.lateStarts += rs.lateStarts
		if rs.attempts > 0 {
			v.minLeft = min(v.minLeft, rs.minLeft)
		}
		// The destination budget: each call deposits DefaultBudgetRatio,
		// on top of DefaultDestinationBurst.
		v.bound[i] = rs.calls + int(retry.DefaultBudgetRatio*float64(rs.calls)) + retry.DefaultDestinationBurst
	}
	if e := res.effects; e != nil {
		e.mu.Lock()
		v.effectKeys, v.effectDos = len(e.runs), e.dos
		for _, n := range e.runs {
			v.effectRuns += n
			if n > 1 {
				v.effectTwice++
			}
		}
		e.mu.Unlock()
	}
	v.spans, v.spanLeaks, v.records, v.recordLeaks = w.leaks(canary)
	w.close()
	res.watch = nil // what it recorded is not left behind
	// The run's goroutines first (goleak.Find waits for them to end): one
	// still ending holds its buffers, which a loaded machine measured as
	// heap left behind.
	v.goroutinesLeft = goleak.Find(before.goroutines, ignoreOpenCensus)
	after := measure()
	if before.fds >= 0 {
		v.fdsLeft = after.fds - before.fds
	}
	v.heapLeft = int64(after.heap) - int64(before.heap)
	return v
}

// ignoreOpenCensus ignores the worker genai's dependencies start at init,
// for good.
var ignoreOpenCensus = goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start")

// heapSlack is how much more heap a run may hold after it than before: its
// results (a latency and a time per request) and what the SDKs initialise
// once per process. Measured with heap profiles: a process's first run
// leaves up to 0.9 MiB, later runs less than 50 KiB.
const heapSlack = 2 << 20

// violations lists the invariants the run broke; empty when it kept them
// all. maxOvershoot is the lateness allowed (zero on virtual time).
func (v *invariants) violations(maxOvershoot time.Duration) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	v.callViolations(add, maxOvershoot)
	v.leakViolations(add)
	return out
}

// callViolations adds the broken invariants of the run's calls: each
// request accepted or failed classified, attempts within the budgets'
// bound, none started or returned late, each side effect run once.
func (v *invariants) callViolations(add func(format string, args ...any), maxOvershoot time.Duration) {
	failed := 0
	for _, n := range v.failed {
		failed += n
	}
	if v.accepted+failed != v.requests || v.unclassified != 0 {
		add("%d requests: %d accepted + %d failed, %d without a *portico.Error", v.requests, v.accepted, failed, v.unclassified)
	}
	for i := range v.attempts {
		if v.attempts[i] > v.bound[i] {
			add("%s: %d attempts over the budgets' bound %d", dial.Providers[i].Name, v.attempts[i], v.bound[i])
		}
	}
	if v.lateStarts != 0 {
		add("%d attempts started after their deadline", v.lateStarts)
	}
	if v.overshoot > maxOvershoot {
		add("a call returned %v after its deadline (allowed %v)", v.overshoot, maxOvershoot)
	}
	if v.effectTwice != 0 || v.effectKeys == 0 {
		add("%d of %d execution keys ran their side effect twice (want none of some)", v.effectTwice, v.effectKeys)
	}
}

// leakViolations adds the broken invariants of what the run left behind:
// no goroutines, file descriptors or heap past heapSlack, some spans and
// log records, and the prompt's canary in none of them nor in errors.
func (v *invariants) leakViolations(add func(format string, args ...any)) {
	if v.goroutinesLeft != nil {
		add("goroutines left: %v", v.goroutinesLeft)
	}
	if v.fdsLeft > 0 {
		add("%d file descriptors left open", v.fdsLeft)
	}
	if v.heapLeft > heapSlack {
		add("%d KiB more heap after the run than before", v.heapLeft>>10)
	}
	if v.spans == 0 || v.records == 0 {
		add("%d spans and %d log records recorded, want some of each", v.spans, v.records)
	}
	if v.spanLeaks+v.recordLeaks+v.errorLeaks != 0 {
		add("the prompt's canary is in %d spans, %d log records and %d error strings", v.spanLeaks, v.recordLeaks, v.errorLeaks)
	}
}

// print writes the run's invariants, one line each.
func (v *invariants) print(w io.Writer) {
	var kinds []string
	for k := fakeopenai.NoFault + 1; k <= fakeopenai.FaultDisconnect; k++ {
		kinds = append(kinds, fmt.Sprintf("%v %d", k, v.faults[k]))
	}
	fmt.Fprintf(w, "faults injected         %s\n", strings.Join(kinds, ", "))
	fmt.Fprintf(w, "invariants at %.0f%% faults:\n", 100*v.rate)
	failed := 0
	for _, n := range v.failed {
		failed += n
	}
	fmt.Fprintf(w, "  every request ended    %d = %d accepted + %d failed (%s), %d unclassified\n", v.requests, v.accepted, failed, classCounts(v.failed), v.unclassified)
	var b strings.Builder
	for i := range v.attempts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d <= %d", dial.Providers[i].Name, v.attempts[i], v.bound[i])
	}
	fmt.Fprintf(w, "  attempts vs bound      %s (calls x 1.1 + 100 per destination)\n", b.String())
	over := fmt.Sprintf("no call returned after it (the latest %v before)", (-v.overshoot).Round(time.Millisecond))
	if v.overshoot > 0 {
		over = fmt.Sprintf("overshoot %v", v.overshoot)
	}
	fmt.Fprintf(w, "  deadline               %d attempts started after it (least time left %v); %s\n", v.lateStarts, v.minLeft.Round(time.Millisecond), over)
	fmt.Fprintf(w, "  side effects           %d keys, %d runs for %d Do calls, %d keys run twice\n", v.effectKeys, v.effectRuns, v.effectDos, v.effectTwice)
	left := "none"
	if v.goroutinesLeft != nil {
		left = "some"
	}
	fmt.Fprintf(w, "  left behind            goroutines %s, file descriptors %+d, heap %+d KiB\n", left, v.fdsLeft, v.heapLeft>>10)
	fmt.Fprintf(w, "  canary                 in %d of %d spans, %d of %d log records, %d error strings\n", v.spanLeaks, v.spans, v.recordLeaks, v.records, v.errorLeaks)
}

// errNotKept is returned by runChaos when a run broke an invariant.
var errNotKept = errors.New("chaos: invariants broken")

// startChaos makes r a chaos run's: a canary in every prompt, a watch on
// what the stack lets out, side effects through package effect.
func (r *results) startChaos() error {
	w, err := newWatch()
	if err != nil {
		return err
	}
	e, err := newEffects(w.logger)
	if err != nil {
		return err
	}
	r.canary, r.watch, r.effects = canary, w, e
	return nil
}

// runChaos is the drill: a run of cfg at each of rates, each checked
// (check) and its invariants printed after its summary; with plot, a PNG of
// the runs' goodput and attempts. It fails, after every run, with
// errNotKept when a run broke an invariant. The runs' allowed overshoot is
// maxOvershoot: on loopback, 100 ms to unwind a call plus the most a
// goroutine's timer woke late during the run (see lateness): the
// scheduling of a busy machine, measured, not guessed; in a synctest
// bubble (cfg.pipe), none.
func runChaos(ctx context.Context, out io.Writer, cfg runConfig, rates []float64, plot string) ([]*invariants, error) {
	maxOvershoot := 100 * time.Millisecond
	if cfg.pipe {
		maxOvershoot = 0
	}
	var all []*invariants
	var runs []*results
	var titles []string
	broken := false
	for _, rate := range rates {
		c := cfg
		c.faultRate = rate
		fmt.Fprintf(out, "\nchaos: every fault kind on %.0f%% of calls\n", 100*rate)
		before := measure()
		late := func() time.Duration { return 0 }
		if !cfg.pipe {
			late = lateness()
		}
		res, err := run(ctx, out, c)
		allowed := maxOvershoot + late() // the probe stopped before check counts goroutines
		if err != nil {
			return all, err
		}
		v := check(rate, res, res.watch, before)
		v.print(out)
		for _, s := range v.violations(allowed) {
			fmt.Fprintln(out, "  BROKEN:", s)
			broken = true
		}
		all, runs = append(all, v), append(runs, res)
		titles = append(titles, fmt.Sprintf("every fault kind on %.0f%% of calls", 100*rate))
	}
	if plot != "" {
		if err := writePlot(plot, titles, runs); err != nil {
			return all, err
		}
	}
	if broken {
		return all, errNotKept
	}
	return all, nil
}

// lateness starts measuring how late a goroutine's 1 ms sleep wakes, and
// returns the function that stops it and returns the most: the delay a
// busy machine's scheduler adds to every timer, a deadline's included.
func lateness() (stop func() time.Duration) {
	done, finished := make(chan struct{}), make(chan struct{})
	var most time.Duration
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			start := time.Now()
			time.Sleep(time.Millisecond)
			most = max(most, time.Since(start)-time.Millisecond)
		}
	}()
	return func() time.Duration {
		close(done)
		<-finished
		return most
	}
}
