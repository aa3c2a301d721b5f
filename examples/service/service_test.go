// Package main_test builds what a multi-tenant service would with
// Portico: the preset stack over two real adapters (openai-go and
// anthropic-sdk-go) against their fake servers over net.Pipe, in
// testing/synctest bubbles, and breaks it.
package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/adaptive"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
	"github.com/portico-llm/portico/throttle"
	"github.com/portico-llm/portico/trace"
)

// The genai SDK (the Gemini route of the command) starts OpenCensus's
// worker at init; it is not the service's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

const (
	gpt    = "gpt-4o-mini"
	claude = "claude-haiku-4-5"
)

// svc is one service's stack over its two fake providers.
type svc struct {
	oai   *fakeopenai.Server
	ant   *fakeanthropic.Server
	st    *stack.Stack
	cfg   stack.Config // what st was built from
	spans *tracetest.InMemoryExporter
}

// concurrency is the adaptive in-flight limit of the named route.
func (s *svc) concurrency(name string) *adaptive.Limit {
	for _, r := range s.cfg.Routes {
		if r.Name == name {
			return r.Limiter.Concurrency.(*adaptive.Limit)
		}
	}
	return nil
}

// aimd is a route limiter whose only cap is an AIMD adaptive limit,
// starting at initial, up to most.
func aimd(t *testing.T, initial, most int) *ratelimit.Config {
	l, err := adaptive.New(adaptive.Config{Algorithm: adaptive.AIMD{}, Initial: initial, Max: most})
	if err != nil {
		t.Fatal(err)
	}
	return &ratelimit.Config{Concurrency: l}
}

// oaiModel and antModel are the fakes' models with faults: 10 ms to the
// headers, 20 ms to the first token, 8 tokens at 500/s, about 46 ms in all.
func oaiModel(faults ...fakeopenai.Fault) fakeopenai.ModelConfig {
	return fakeopenai.ModelConfig{Name: gpt, Latency: 10 * time.Millisecond, TTFT: 20 * time.Millisecond, TokensPerSecond: 500, Faults: faults}
}

func antModel(faults ...fakeanthropic.Fault) fakeanthropic.ModelConfig {
	return fakeanthropic.ModelConfig{Name: claude, Latency: 10 * time.Millisecond, TTFT: 20 * time.Millisecond, TokensPerSecond: 500, Faults: faults}
}

// caps are both routes' Capabilities unless a test says otherwise.
var caps = portico.Capabilities{ContextWindow: 128_000, MaxOutput: 16_000, Tools: true, Schema: portico.SchemaJSON,
	Modalities: portico.ModalityText | portico.ModalityImage, InputPrice: 1e-6, OutputPrice: 4e-6}

// newSvc starts the fakes over net.Pipe (call it inside a bubble) and
// builds the preset: per-client limits, hedging to the next route,
// adaptive concurrency and a throttle on each route, tracing into memory.
// edit may change the Config before stack.New.
func newSvc(t *testing.T, om fakeopenai.ModelConfig, am fakeanthropic.ModelConfig, edit func(*stack.Config)) *svc {
	t.Helper()
	s := &svc{spans: tracetest.NewInMemoryExporter()}
	var err error
	if s.oai, err = fakeopenai.StartPipe(fakeopenai.Config{Seed: 1, Models: []fakeopenai.ModelConfig{om}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.oai.Close)
	if s.ant, err = fakeanthropic.StartPipe(fakeanthropic.Config{Seed: 2, Models: []fakeanthropic.ModelConfig{am}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ant.Close)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(s.spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr, err := trace.New(trace.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	oa := openai.New(openai.Config{Model: gpt}, openaisdk.WithBaseURL(s.oai.BaseURL()), openaisdk.WithAPIKey("k"), openaisdk.WithHTTPClient(s.oai.Client()))
	an := anthropic.New(anthropic.Config{Model: claude}, anthropicsdk.WithBaseURL(s.ant.BaseURL()), anthropicsdk.WithAPIKey("k"), anthropicsdk.WithHTTPClient(s.ant.Client()))
	route := func(name, provider string, m portico.Model) stack.Route {
		c := caps
		c.Provider = provider
		return stack.Route{
			Route:    portico.Route{Name: name, Model: m, Capabilities: c},
			Limiter:  aimd(t, 20, 50),
			Throttle: &throttle.Config{Rand: func() float64 { return 0.5 }},
		}
	}
	cfg := stack.Config{
		Routes:   []stack.Route{route("openai", "openai", oa), route("anthropic", "anthropic", an)},
		Client:   &ratelimit.Config{Limits: ratelimit.Limits{Requests: 60, Tokens: 200_000, MaxInFlight: 4}},
		Deadline: 10 * time.Second,
		Hedge:    &hedge.Config{Delay: 300 * time.Millisecond},
		Tracer:   tr,
	}
	if edit != nil {
		edit(&cfg)
	}
	if s.st, err = stack.New(cfg); err != nil {
		t.Fatal(err)
	}
	s.cfg = cfg
	return s
}

var answerSchema = &portico.Schema{Name: "answer", JSON: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"},"n":{"type":"integer"}},"required":["answer","n"],"additionalProperties":false}`)}

// req is tenant's request; stream sets OnChunk, schema asks for answerSchema.
func req(tenant int, stream, schema bool) (*portico.Request, *[]string) {
	var chunks []string
	r := &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, "canary-7f3e: summarise the ticket")},
		MaxOutputTokens: 64,
		Identity:        portico.Identity{ClientKey: fmt.Sprintf("tenant-%03d", tenant)},
	}
	if stream {
		var mu sync.Mutex
		r.OnChunk = func(c portico.Chunk) error { mu.Lock(); chunks = append(chunks, c.Text); mu.Unlock(); return nil }
	}
	if schema {
		r.Schema = answerSchema
	}
	return r, &chunks
}

// outcome is what one call ended with.
type outcome struct {
	resp *portico.Response
	err  error
	took time.Duration
}

// fire sends n requests, conc at a time, each under timeout, and waits
// for all.
func (s *svc) fire(ctx context.Context, n, conc int, timeout time.Duration, mk func(i int) *portico.Request) []outcome {
	out := make([]outcome, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				c, cancel := context.WithTimeout(ctx, timeout)
				start := time.Now()
				resp, err := s.st.Generate(c, mk(i))
				out[i] = outcome{resp, err, time.Since(start)}
				cancel()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// tally counts outcomes by route answered or error class.
func tally(out []outcome) map[string]int {
	m := map[string]int{}
	for _, o := range out {
		switch {
		case o.err == nil:
			m["route:"+o.resp.Route]++
		default:
			var pe *portico.Error
			if !errors.As(o.err, &pe) {
				m["unclassified"]++
			}
			m["class:"+portico.ClassOf(o.err).String()]++
		}
	}
	return m
}

// TestHealthyService: 300 tenants, one request each, a third streamed and
// a third with a schema, all answered by the primary within the deadline,
// every streamed answer's chunks its text, one request span per call and
// no prompt in any span.
func TestHealthyService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSvc(t, oaiModel(), antModel(), nil)
		chunks := make([]*[]string, 300)
		out := s.fire(t.Context(), 300, 20, 5*time.Second, func(i int) *portico.Request {
			r, c := req(i, i%3 == 1, i%3 == 2)
			chunks[i] = c
			return r
		})
		got := tally(out)
		if got["route:openai"] != 300 {
			t.Errorf("outcomes %v, want 300 answered by openai", got)
		}
		for i, o := range out {
			if o.err != nil {
				t.Errorf("request %d: %v", i, o.err)
				break
			}
			if i%3 == 1 && strings.Join(*chunks[i], "") != o.resp.Text {
				t.Errorf("request %d: chunks %q, Text %q; want the same text", i, *chunks[i], o.resp.Text)
			}
			if i%3 == 2 {
				var v struct {
					Answer *string
					N      *int
				}
				if err := json.Unmarshal([]byte(o.resp.Text), &v); err != nil || v.Answer == nil || v.N == nil {
					t.Errorf("request %d: schema answer %q: %v", i, o.resp.Text, err)
				}
			}
		}
		if n := s.oai.Count(gpt); n != 300 {
			t.Errorf("openai saw %d requests, want 300", n)
		}
		if p, n, acc := s.st.Throttle("openai").Probability(); p != 0 || n != 300 || acc != 300 {
			t.Errorf("openai throttle: p=%v over %d requests, %d accepts; want 0 over 300 and 300", p, n, acc)
		}
		checkSpans(t, s, 300)
	})
}

// checkSpans: one request span per call ("chat ..."), and the canary in
// no attribute or event.
func checkSpans(t *testing.T, s *svc, calls int) {
	t.Helper()
	req := 0
	for _, sp := range s.spans.GetSpans() {
		if strings.HasPrefix(sp.Name, "chat") {
			req++
		}
		for _, a := range sp.Attributes {
			if strings.Contains(a.Value.String(), "canary-7f3e") {
				t.Errorf("span %q attribute %s carries the prompt", sp.Name, a.Key)
			}
		}
		for _, e := range sp.Events {
			for _, a := range e.Attributes {
				if strings.Contains(a.Value.String(), "canary-7f3e") {
					t.Errorf("span %q event %q carries the prompt", sp.Name, e.Name)
				}
			}
		}
	}
	if req != calls {
		t.Errorf("%d request spans, want %d", req, calls)
	}
}

// TestPrimaryDown: every OpenAI call a 503, or a 429 asking for 30 s, or a
// connection that hangs before its headers, or a malformed body, or a
// stream that stalls or is cut after two chunks: every request is answered
// by Anthropic within its 3 s deadline, but for the streams that broke
// after their chunks reached the caller (no ContinueOnBreak), which fail.
func TestPrimaryDown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fakeopenai.Fault
	}{
		{"503", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 1}},
		{"429 retry-after 30s", fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfter: 30 * time.Second, Fraction: 1}},
		{"hung", fakeopenai.Fault{Kind: fakeopenai.FaultStallBeforeHeaders, Fraction: 1}},
		{"malformed", fakeopenai.Fault{Kind: fakeopenai.FaultMalformed, Fraction: 1}},
		{"stall mid-stream", fakeopenai.Fault{Kind: fakeopenai.FaultStallMidStream, AfterChunks: 2, Fraction: 1}},
		{"disconnect", fakeopenai.Fault{Kind: fakeopenai.FaultDisconnect, AfterChunks: 2, Fraction: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSvc(t, oaiModel(tc.fault), antModel(), nil)
				chunks := make([]*[]string, 200)
				out := s.fire(t.Context(), 200, 20, 3*time.Second, func(i int) *portico.Request {
					r, c := req(i%50, i%2 == 1, false)
					chunks[i] = c
					return r
				})
				got := tally(out)
				var slowest time.Duration
				for _, o := range out {
					slowest = max(slowest, o.took)
				}
				t.Logf("outcomes %v; openai saw %d, anthropic %d; slowest %v; openai breaker %v", got, s.oai.Count(gpt), s.ant.Count(claude), slowest, s.st.Breaker("openai").State())
				for i, o := range out {
					if o.err == nil {
						continue
					}
					// A streamed request whose chunks reached the caller
					// cannot move on (no ContinueOnBreak): its error is the
					// break's. Any other must be answered.
					if i%2 == 0 || len(*chunks[i]) == 0 {
						t.Errorf("request %d (streamed %v, %d chunks delivered): %v", i, i%2 == 1, len(*chunks[i]), o.err)
					}
				}
			})
		})
	}
}

// patternSchema asks for a six-digit code: the fakes, like a model that
// does not follow patterns, answer a word.
var patternSchema = &portico.Schema{Name: "code", JSON: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","pattern":"^[0-9]{6}$"}},"required":["code"]}`)}

// TestPoisonTenant: one tenant whose schema the models never satisfy sends
// 100 requests, while 200 other tenants send one plain request each,
// interleaved. The poison tenant's requests fail (invalid_response), and
// its failures open both breakers: 177 of the 200 others are refused.
func TestPoisonTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSvc(t, oaiModel(), antModel(), func(c *stack.Config) {
			c.Client = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 600, MaxInFlight: 20}}
		})
		out := s.fire(t.Context(), 300, 20, 5*time.Second, func(i int) *portico.Request {
			if i%3 == 0 {
				r, _ := req(999, false, false)
				r.Schema = patternSchema
				return r
			}
			r, _ := req(i, false, false)
			return r
		})
		poison, others := map[string]int{}, map[string]int{}
		for i, o := range out {
			m := others
			if i%3 == 0 {
				m = poison
			}
			if o.err != nil {
				m[portico.ClassOf(o.err).String()]++
			} else {
				m["ok "+o.resp.Route]++
			}
		}
		t.Logf("poison tenant: %v; others: %v; openai saw %d, anthropic %d; breakers %v %v", poison, others, s.oai.Count(gpt), s.ant.Count(claude), s.st.Breaker("openai").State(), s.st.Breaker("anthropic").State())
		if others["ok openai"] != 200 {
			t.Errorf("the other tenants got %v, want 200 answers from openai", others)
		}
	})
}

// TestImpatientCallers: callers whose deadlines are shorter than any
// answer (25 ms, answers take about 46 ms), or who cancel mid-stream, fail
// with Deadline or Canceled; the routes stay healthy for the patient ones
// after them: breakers closed, throttles open, every later request answered
// by the primary.
func TestImpatientCallers(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSvc(t, oaiModel(), antModel(), nil)
				out := s.fire(t.Context(), 200, 20, 25*time.Millisecond, func(i int) *portico.Request {
					r, _ := req(i, stream, i%2 == 0)
					return r
				})
				t.Logf("impatient: %v; openai saw %d, anthropic %d; first: %v", tally(out), s.oai.Count(gpt), s.ant.Count(claude), out[0].err)
				for i, o := range out {
					if c := portico.ClassOf(o.err); c != portico.Deadline {
						t.Errorf("impatient request %d = %v (class %v), want Deadline", i, o.err, c)
						break
					}
				}
				// Cancel after the first chunk.
				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				for i := range 15 { // below the routes' concurrency limits
					r, _ := req(i, true, false)
					r.OnChunk = func(portico.Chunk) error { cancel(); return nil }
					wg.Go(func() {
						if _, err := s.st.Generate(ctx, r); portico.ClassOf(err) != portico.Canceled {
							t.Errorf("canceled mid-stream = %v, want Canceled", err)
						}
					})
				}
				wg.Wait()
				cancel()
				for _, name := range []string{"openai", "anthropic"} {
					p, n, acc := s.st.Throttle(name).Probability()
					t.Logf("%s: breaker %v, throttle p=%v (%d requests, %d accepts), concurrency limit %d", name, s.st.Breaker(name).State(), p, n, acc, s.concurrency(name).Limit())
				}
				out = s.fire(t.Context(), 100, 20, 5*time.Second, func(i int) *portico.Request {
					r, _ := req(i, stream, i%2 == 0)
					return r
				})
				if got := tally(out); got["route:openai"] != 100 {
					t.Errorf("patient requests after them: %v, want 100 answered by openai", got)
				}
			})
		})
	}
}

// observer counts the events it sees, by kind.
type observer struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *observer) Observe(_ context.Context, e portico.Event) {
	o.mu.Lock()
	o.n[e.Kind.String()+":"+e.Route]++
	o.mu.Unlock()
}

// TestInertTracerLosesNothing: the same faulty traffic through the stack
// without a Tracer, with a Tracer over no-op providers and no logger (which
// adds no request layer), and with a recording one: the same answers,
// errors and events reach the caller's own Observer in all three.
func TestInertTracerLosesNothing(t *testing.T) {
	run := func(t *testing.T, tracer func() *trace.Tracer) (map[string]int, map[string]int) {
		var got, events map[string]int
		synctest.Test(t, func(t *testing.T) {
			s := newSvc(t, oaiModel(fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 0.3}, fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfter: time.Second, Fraction: 0.1}),
				antModel(), func(c *stack.Config) { c.Tracer, c.Hedge = tracer(), nil }) // no hedge: a race is timing
			o := &observer{n: map[string]int{}}
			ctx := portico.ContextWithObserver(t.Context(), o)
			out := s.fire(ctx, 100, 1, 5*time.Second, func(i int) *portico.Request {
				r, _ := req(i, i%2 == 1, false)
				return r
			})
			got, events = tally(out), o.n
		})
		return got, events
	}
	var inert, none, real map[string]int
	var inertEv, noneEv, realEv map[string]int
	t.Run("none", func(t *testing.T) { none, noneEv = run(t, func() *trace.Tracer { return nil }) })
	t.Run("inert", func(t *testing.T) {
		inert, inertEv = run(t, func() *trace.Tracer {
			tr, err := trace.New(trace.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
			if err != nil {
				t.Fatal(err)
			}
			return tr
		})
	})
	t.Run("recording", func(t *testing.T) {
		real, realEv = run(t, func() *trace.Tracer {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
			tr, err := trace.New(trace.Config{TracerProvider: tp, MeterProvider: metricnoop.NewMeterProvider()})
			if err != nil {
				t.Fatal(err)
			}
			return tr
		})
	})
	t.Logf("none %v %v\ninert %v %v\nrecording %v %v", none, noneEv, inert, inertEv, real, realEv)
	if fmt.Sprint(none) != fmt.Sprint(inert) || fmt.Sprint(none) != fmt.Sprint(real) {
		t.Errorf("outcomes differ: none %v, inert %v, recording %v", none, inert, real)
	}
	if fmt.Sprint(noneEv) != fmt.Sprint(inertEv) || fmt.Sprint(noneEv) != fmt.Sprint(realEv) {
		t.Errorf("events differ: none %v, inert %v, recording %v", noneEv, inertEv, realEv)
	}
}

// TestFloodingTenant: one tenant sends 600 requests, 40 at a time, among
// 200 requests of 100 other tenants: it gets its 60 a minute at most, 4 in
// flight, refused at once with a Retry-After; every other tenant is
// answered by the primary.
func TestFloodingTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSvc(t, oaiModel(), antModel(), func(c *stack.Config) {
			for i := range c.Routes {
				c.Routes[i].Limiter = aimd(t, 100, 200)
			}
		})
		out := s.fire(t.Context(), 800, 40, 5*time.Second, func(i int) *portico.Request {
			if i%4 != 0 {
				r, _ := req(0, i%2 == 1, false)
				return r
			}
			r, _ := req(1+i%100, i%8 == 4, false)
			return r
		})
		flood, others := map[string]int{}, map[string]int{}
		for i, o := range out {
			m := others
			if i%4 != 0 {
				m = flood
			}
			if o.err != nil {
				m[portico.ClassOf(o.err).String()]++
				if ra := portico.RetryAfterOf(o.err); i%4 != 0 && portico.ClassOf(o.err) == portico.RateLimited && ra <= 0 {
					t.Errorf("flood refusal without Retry-After: %v", o.err)
				}
			} else {
				m["ok "+o.resp.Route]++
			}
		}
		t.Logf("flooder: %v; others: %v; client keys %d", flood, others, s.st.ClientLimiter().Keys())
		if others["ok openai"] != 200 {
			t.Errorf("others: %v, want 200 answered by openai", others)
		}
		if n := flood["ok openai"] + flood["ok anthropic"]; n > 60 {
			t.Errorf("flooder answered %d times, want at most 60 (its limit per minute)", n)
		}
	})
}

// TestRouteHedgeCutsTail: 10% of OpenAI's calls stall 5 s before their
// headers; the route hedges to itself after 100 ms (Route.Hedge), and the
// group to Anthropic after 300 ms: no request waits for a stall longer than
// the group's hedge and Anthropic's answer (about 45 ms).
func TestRouteHedgeCutsTail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSvc(t, oaiModel(fakeopenai.Fault{Kind: fakeopenai.FaultStallBeforeHeaders, Stall: 5 * time.Second, Fraction: 0.1}), antModel(), func(c *stack.Config) {
			c.Routes[0].Hedge = &hedge.Config{Delay: 100 * time.Millisecond}
		})
		out := s.fire(t.Context(), 400, 10, 3*time.Second, func(i int) *portico.Request {
			r, _ := req(i%100, i%2 == 1, i%4 == 0)
			return r
		})
		var slowest time.Duration
		for _, o := range out {
			slowest = max(slowest, o.took)
		}
		t.Logf("%v; openai saw %d, anthropic %d; slowest %v", tally(out), s.oai.Count(gpt), s.ant.Count(claude), slowest)
		if got := tally(out); got["route:openai"]+got["route:anthropic"] != 400 || slowest > 350*time.Millisecond {
			t.Errorf("outcomes %v, slowest %v; want all answered within 350 ms", got, slowest)
		}
	})
}

// TestUnlikeRoutes: OpenAI reads images, takes strict schemas and a 128k
// window; Anthropic here a text-only route with an 8k window and
// best-effort schemas. With OpenAI failing every call, a request only
// OpenAI can serve must never reach Anthropic: each of them fails, naming
// the need Anthropic lacks, and Anthropic's server sees only the plain ones.
func TestUnlikeRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSvc(t, oaiModel(fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 1}), antModel(), func(c *stack.Config) {
			c.Routes[0].Capabilities.Schema = portico.SchemaStrict
			c.Routes[1].Capabilities.Modalities = portico.ModalityText
			c.Routes[1].Capabilities.ContextWindow = 8_000
			c.Routes[1].Capabilities.MaxOutput = 4_000
			c.Routes[0].Throttle, c.Routes[1].Throttle = nil, nil
		})
		img := portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartText, Text: "canary-7f3e: what is this?"}, {Kind: portico.PartImage, ImageURL: "https://example.com/x.png"}}}
		long := portico.Text(portico.RoleUser, "canary-7f3e: "+string(make([]byte, 40_000)))
		kinds := []struct {
			name   string
			edit   func(*portico.Request)
			reason string // the hop reason at anthropic; "" if it may serve
		}{
			{"plain", func(*portico.Request) {}, ""},
			{"image", func(r *portico.Request) { r.Messages = []portico.Message{img} }, "modality"},
			{"long", func(r *portico.Request) { r.Messages = []portico.Message{long} }, "context window"},
			{"strict", func(r *portico.Request) { s := *answerSchema; s.Strict = true; r.Schema = &s }, "strict schema"},
			{"max output", func(r *portico.Request) { r.MaxOutputTokens = 6_000 }, "max output"},
			{"image contract", func(r *portico.Request) { r.Contract = &portico.Contract{Modalities: portico.ModalityImage} }, "modality"},
		}
		out := s.fire(t.Context(), 240, 8, 5*time.Second, func(i int) *portico.Request {
			r, _ := req(i%40, i%2 == 1, false)
			kinds[i%len(kinds)].edit(r)
			return r
		})
		for i, o := range out {
			k := kinds[i%len(kinds)]
			if k.reason == "" {
				if o.err != nil || o.resp.Route != "anthropic" {
					t.Errorf("%s request %d = %v, want anthropic's answer", k.name, i, o.err)
				}
				continue
			}
			if o.err == nil {
				t.Errorf("%s request %d answered by %s, want a failure", k.name, i, o.resp.Route)
				continue
			}
			var ex *fallback.Exhausted
			if !errors.As(o.err, &ex) {
				t.Errorf("%s request %d = %v, want exhausted", k.name, i, o.err)
				continue
			}
			found := false
			for _, h := range ex.Hops {
				if h.Route == "anthropic" {
					found = h.Reason == k.reason && h.Err == nil
				}
			}
			if !found {
				t.Errorf("%s request %d: hops %+v, want anthropic skipped for %q", k.name, i, ex.Hops, k.reason)
			}
		}
		if n := s.ant.Count(claude); n != 40 {
			t.Errorf("anthropic saw %d requests, want the 40 plain ones", n)
		}
	})
}

// TestContinueAcrossProviders: OpenAI's streams break after 3 chunks (a
// cut connection, or an error event); the requests continue on Anthropic,
// which takes a prefill: every caller gets the whole answer, its chunks
// are the answer's text, and no answer repeats what was delivered.
func TestContinueAcrossProviders(t *testing.T) {
	for _, fault := range []fakeopenai.Fault{
		{Kind: fakeopenai.FaultDisconnect, AfterChunks: 3, Fraction: 1},
		{Kind: fakeopenai.FaultStreamError, AfterChunks: 3, Fraction: 1},
		{Kind: fakeopenai.FaultStallMidStream, AfterChunks: 3, Fraction: 1},
	} {
		t.Run(fault.Kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSvc(t, oaiModel(fault), antModel(), func(c *stack.Config) {
					c.Routes[1].Capabilities.Continuation = portico.ContinuePrefill
					c.Hedge, c.Routes[0].Throttle = nil, nil // every call breaks: no race, no throttling, no breaker
					c.Routes[0].Skip |= stack.SkipBreaker
					c.Routes[0].Retry.Timeouts.ChunkGap = 200 * time.Millisecond
				})
				chunks := make([]*[]string, 40)
				out := s.fire(t.Context(), 40, 4, 5*time.Second, func(i int) *portico.Request {
					r, c := req(i, true, false)
					r.ContinueOnBreak = true
					chunks[i] = c
					return r
				})
				for i, o := range out {
					if o.err != nil {
						t.Errorf("request %d: %v", i, o.err)
						continue
					}
					var all string
					for _, c := range *chunks[i] {
						all += c
					}
					if all != o.resp.Text || o.resp.Route != "anthropic" || len(o.resp.Hops) != 1 || o.resp.Hops[0].Chunks != 3 {
						t.Errorf("request %d: chunks %q, Text %q from %s, hops %+v; want the same text, continued by anthropic after 3 chunks", i, all, o.resp.Text, o.resp.Route, o.resp.Hops)
					}
				}
			})
		})
	}
}
