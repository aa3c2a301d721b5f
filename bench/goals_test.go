package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	anthoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	oai "github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/provider/gemini"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// The fakes' models: the default answers with 8 tokens; short and long
// stream 4 and 68 chunks of text, the per-chunk cost is the difference.
const (
	shortModel, shortTokens = "short", 4
	longModel, longTokens   = "long", 68
	maxOut                  = 256 // every request's output limit, sent by adapter and SDK alike
)

// provider is one real SDK over an in-memory fake (net.Pipe, no socket):
// its adapter, and the same call through the SDK alone.
type provider struct {
	name    string
	adapter portico.Model
	model   string // the fake's default model
	sdk     func(ctx context.Context) error
	close   func()
}

func sdkRequest(model string) *portico.Request {
	return &portico.Request{Model: model, MaxOutputTokens: maxOut,
		Messages: []portico.Message{portico.Text(portico.RoleUser, "hello there")},
		Identity: portico.Identity{ClientKey: "alice"}}
}

// providers starts each adapter's fake over net.Pipe, with the default
// model and the short and long ones.
func providers(tb testing.TB) []provider {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	text := "hello there"
	o, err := fakeopenai.StartPipe(fakeopenai.Config{Models: []fakeopenai.ModelConfig{
		{Name: fakeopenai.DefaultModel}, {Name: shortModel, OutputTokens: shortTokens}, {Name: longModel, OutputTokens: longTokens}}})
	must(err)
	oopts := []oaioption.RequestOption{oaioption.WithBaseURL(o.BaseURL()), oaioption.WithAPIKey("k"), oaioption.WithHTTPClient(o.Client()), oaioption.WithMaxRetries(0)}
	oc := oai.NewClient(oopts...)
	oparams := oai.ChatCompletionNewParams{Model: fakeopenai.DefaultModel, MaxCompletionTokens: oai.Int(maxOut),
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage(text)}}

	a, err := fakeanthropic.StartPipe(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{
		{Name: fakeanthropic.DefaultModel}, {Name: shortModel, OutputTokens: shortTokens}, {Name: longModel, OutputTokens: longTokens}}})
	must(err)
	aopts := []anthoption.RequestOption{anthoption.WithBaseURL(a.BaseURL()), anthoption.WithAPIKey("k"), anthoption.WithHTTPClient(a.Client()), anthoption.WithMaxRetries(0)}
	ac := anth.NewClient(aopts...)
	aparams := anth.MessageNewParams{Model: fakeanthropic.DefaultModel, MaxTokens: maxOut,
		Messages: []anth.MessageParam{anth.NewUserMessage(anth.NewTextBlock(text))}}

	g, err := fakegemini.StartPipe(fakegemini.Config{Models: []fakegemini.ModelConfig{
		{Name: fakegemini.DefaultModel}, {Name: shortModel, OutputTokens: shortTokens}, {Name: longModel, OutputTokens: longTokens}}})
	must(err)
	cc := genai.ClientConfig{APIKey: "k", HTTPClient: g.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: g.URL()}}
	gm, err := gemini.New(context.Background(), gemini.Config{}, cc)
	must(err)
	bare := cc
	gc, err := genai.NewClient(context.Background(), &bare)
	must(err)
	contents := []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}

	return []provider{
		{"openai", openai.New(openai.Config{}, oopts...), fakeopenai.DefaultModel, func(ctx context.Context) error {
			_, err := oc.Chat.Completions.New(ctx, oparams)
			return err
		}, o.Close},
		{"anthropic", anthropic.New(anthropic.Config{}, aopts...), fakeanthropic.DefaultModel, func(ctx context.Context) error {
			_, err := ac.Messages.New(ctx, aparams)
			return err
		}, a.Close},
		{"gemini", gm, fakegemini.DefaultModel, func(ctx context.Context) error {
			// The settings the adapter sends: one request, no continuation.
			cfg := &genai.GenerateContentConfig{MaxOutputTokens: maxOut, AutomaticContinuation: genai.Ptr(false)}
			_, err := gc.Models.GenerateContent(ctx, fakegemini.DefaultModel, contents, cfg)
			return err
		}, g.Close},
	}
}

// inProcess is an http.RoundTripper that serves each request with a
// handler on the caller's goroutine and returns the recorded answer: no
// connection, no goroutine, so a stream's events cost only their parsing.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// streamers returns each adapter over its fake served in process
// (inProcess), with the short and long models.
func streamers(tb testing.TB) []provider {
	tb.Helper()
	const base = "http://fake.invalid"
	o, err := fakeopenai.New(fakeopenai.Config{Models: []fakeopenai.ModelConfig{
		{Name: shortModel, OutputTokens: shortTokens}, {Name: longModel, OutputTokens: longTokens}}})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := fakeanthropic.New(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{
		{Name: shortModel, OutputTokens: shortTokens}, {Name: longModel, OutputTokens: longTokens}}})
	if err != nil {
		tb.Fatal(err)
	}
	g, err := fakegemini.New(fakegemini.Config{Models: []fakegemini.ModelConfig{
		{Name: shortModel, OutputTokens: shortTokens}, {Name: longModel, OutputTokens: longTokens}}})
	if err != nil {
		tb.Fatal(err)
	}
	gm, err := gemini.New(context.Background(), gemini.Config{}, genai.ClientConfig{APIKey: "k",
		HTTPClient: &http.Client{Transport: inProcess{g.Handler()}}, HTTPOptions: genai.HTTPOptions{BaseURL: base}})
	if err != nil {
		tb.Fatal(err)
	}
	return []provider{
		{name: "openai", adapter: openai.New(openai.Config{}, oaioption.WithBaseURL(base+"/v1/"), oaioption.WithAPIKey("k"),
			oaioption.WithHTTPClient(&http.Client{Transport: inProcess{o.Handler()}}))},
		{name: "anthropic", adapter: anthropic.New(anthropic.Config{}, anthoption.WithBaseURL(base), anthoption.WithAPIKey("k"),
			anthoption.WithHTTPClient(&http.Client{Transport: inProcess{a.Handler()}}))},
		{name: "gemini", adapter: gm},
	}
}

// BenchmarkGoals measures issue 24's goals, the calls compared
// interleaved in one run (blocks of calls in turn, see interleave):
//
//		go -C bench test -run '^$' -bench Goals -benchtime=40x -count=5 .
//
//	  - sdk/<provider>: the preset (stack.New over two routes, client limits,
//	    validation on, a no-op tracer, its default deadline) over the
//	    adapter over an in-memory fake (net.Pipe), against the bare SDK's
//	    call of the same request, and the bare adapter's. time-x is the
//	    preset's wall time over the SDK's (goal <= 1.05), allocs-diff its
//	    allocations per call over the SDK's (goal <= 25).
//
//	  - chunk/<provider>: a streamed call through the preset against the
//	    bare adapter's, at 4 and at 68 chunks, the fake served in process
//	    (inProcess: over net.Pipe each event crosses goroutines, tens of
//	    microseconds on a loaded machine, a thousand times the goal);
//	    chunk-ns and chunk-allocs are what the preset adds per chunk (the
//	    difference of the two differences over the 64 chunks between them;
//	    goal <= 50 ns, 0). chunk/inmemory is the same over a model that
//	    streams from memory, where the adapter's microseconds of parsing a
//	    chunk, and their noise, do not hide the preset's nanoseconds.
//
//	  - failsafe: the preset with its deadline over a model answering at
//	    once, against failsafe-go's four-policy pipeline (the table's
//	    failsafe/4policies); time-x is the preset's time over failsafe-go's
//	    (goal <= 0.5). Beside them, in the same rounds, the floor: the
//	    preset without a deadline (nodeadline-x) and one standard deadline
//	    context around the bare model (withdeadline-ns/op); floor-x is the
//	    two together over failsafe-go. What that context is made of, in the
//	    same rounds, time per call: time.Now (clock-ns/op), a timer
//	    armed and stopped (timer-ns/op), a cancelable context and its
//	    cancel (cancel-ns/op).
func BenchmarkGoals(b *testing.B) {
	ctx := context.Background()
	provs := providers(b)
	defer func() {
		for _, p := range provs {
			p.close()
		}
	}()
	for _, p := range provs {
		b.Run("sdk/"+p.name, func(b *testing.B) {
			s := presetOver(b, p.adapter, 0, noopTracer(b))
			req := sdkRequest(p.model)
			generate := func(m portico.Model) func() {
				return func() {
					if _, err := m.Generate(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			}
			f := interleave(b, 20, 200,
				side{"sdk", func() {
					if err := p.sdk(ctx); err != nil {
						b.Fatal(err)
					}
				}},
				side{"adapter", generate(p.adapter)},
				side{"preset", generate(s)})
			sdk, adapter, pre := f[0], f[1], f[2]
			b.ReportMetric(pre.wall, "ns/op")
			b.ReportMetric(sdk.wall, "sdk-ns/op")
			b.ReportMetric(pre.cpu, "cpu-ns/op")
			b.ReportMetric(sdk.cpu, "sdk-cpu-ns/op")
			b.ReportMetric(roundRatio(pre, sdk), "time-x")
			b.ReportMetric(pre.cpu/sdk.cpu, "cpu-x")
			b.ReportMetric(pre.allocs, "allocs/op")
			b.ReportMetric(sdk.allocs, "sdk-allocs/op")
			b.ReportMetric(pre.allocs-sdk.allocs, "allocs-diff")
			b.ReportMetric(roundRatio(adapter, sdk), "adapter-time-x")
			b.ReportMetric(adapter.allocs-sdk.allocs, "adapter-allocs-diff")
		})
	}
	for _, p := range streamers(b) {
		b.Run("chunk/"+p.name, func(b *testing.B) {
			s := presetOver(b, p.adapter, 0, noopTracer(b))
			var chunks int
			streamed := func(model string) *portico.Request {
				r := sdkRequest(model)
				r.OnChunk = func(portico.Chunk) error { chunks++; return nil }
				return r
			}
			short, long := streamed(shortModel), streamed(longModel)
			call := func(m portico.Model, r *portico.Request) func() {
				return func() {
					if _, err := m.Generate(ctx, r); err != nil {
						b.Fatal(err)
					}
				}
			}
			count := func(r *portico.Request) int {
				chunks = 0
				call(p.adapter, r)()
				return chunks
			}
			n := count(long) - count(short)
			f := interleave(b, 10, 100,
				side{"adapter/short", call(p.adapter, short)},
				side{"preset/short", call(s, short)},
				side{"adapter/long", call(p.adapter, long)},
				side{"preset/long", call(s, long)})
			reportChunks(b, n, f)
		})
	}
	b.Run("chunk/inmemory", func(b *testing.B) {
		// The same over a model that streams its chunks from memory, so that
		// the preset's own cost per chunk is not lost in an adapter's
		// parsing (microseconds a chunk, and their noise).
		chunker := func(n int) portico.Model {
			return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
				for range n {
					if err := req.OnChunk(portico.Chunk{Text: "lorem "}); err != nil {
						return nil, err
					}
				}
				return &tableResp, nil
			})
		}
		req := tableReq.Clone()
		req.OnChunk = func(portico.Chunk) error { return nil }
		short, long := chunker(shortTokens), chunker(longTokens)
		ps, pl := presetOver(b, short, 0, noopTracer(b)), presetOver(b, long, 0, noopTracer(b))
		call := func(m portico.Model) func() { return func() { m.Generate(ctx, req) } }
		f := interleave(b, 200, 2000,
			side{"bare/short", call(short)}, side{"preset/short", call(ps)},
			side{"bare/long", call(long)}, side{"preset/long", call(pl)})
		reportChunks(b, longTokens-shortTokens, f)
	})
	b.Run("failsafe", func(b *testing.B) {
		s, nodl := preset(b, 0, noopTracer(b)), preset(b, -1, noopTracer(b))
		fs4 := failsafePipeline(answer, false)
		f := interleave(b, 1000, 10000,
			side{"failsafe", func() { fs4(ctx) }},
			side{"preset", func() { s.Generate(ctx, tableReq) }},
			side{"nodeadline", func() { nodl.Generate(ctx, tableReq) }},
			side{"withdeadline", func() { withDeadline(ctx) }},
			side{"clock", func() { sinkTime = time.Now() }},
			side{"timer", func() { time.AfterFunc(stack.DefaultDeadline, func() {}).Stop() }},
			side{"cancel", func() { _, cancel := context.WithCancel(ctx); cancel() }})
		fs, pre, nd, wd := f[0], f[1], f[2], f[3]
		b.ReportMetric(pre.wall, "ns/op")
		b.ReportMetric(fs.wall, "failsafe-ns/op")
		b.ReportMetric(roundRatio(pre, fs), "time-x")
		b.ReportMetric(pre.cpu/fs.cpu, "cpu-x")
		b.ReportMetric(pre.allocs, "allocs/op")
		b.ReportMetric(fs.allocs, "failsafe-allocs/op")
		// The floor: the preset without a deadline, and one standard
		// deadline context (context.WithDeadline and its cancel, a runtime
		// timer armed and stopped) around the bare model; floor-x is the
		// sum of their ratios to failsafe-go (each a median of the rounds'
		// ratios, steadier than one of medians on a loaded host), the
		// least a preset with one standard deadline context could take.
		ndx, wdx := roundRatio(nd, fs), roundRatio(wd, fs)
		b.ReportMetric(ndx, "nodeadline-x")
		b.ReportMetric(wd.wall, "withdeadline-ns/op")
		b.ReportMetric(wdx, "withdeadline-x")
		b.ReportMetric(ndx+wdx, "floor-x")
		// What the standard deadline is made of: a reading of the wall and
		// monotonic clocks, a runtime timer armed and stopped, and the
		// cancelable context that the timer's context embeds.
		b.ReportMetric(f[4].wall, "clock-ns/op")
		b.ReportMetric(f[5].wall, "timer-ns/op")
		b.ReportMetric(f[6].wall, "cancel-ns/op")
	})
}

// withDeadline calls the bare model under one standard deadline context,
// the preset's default deadline: the floor of what a deadline costs.
func withDeadline(ctx context.Context) {
	ctx, cancel := context.WithDeadline(ctx, time.Now().Add(stack.DefaultDeadline))
	answer.Generate(ctx, tableReq)
	cancel()
}

// reportChunks reports the preset's cost per chunk from the figures of a
// bare model and the preset over it at a short and a long stream, n chunks
// apart, in that order: the difference of the two differences over n.
func reportChunks(b *testing.B, n int, f []figures) {
	as, ps, al, pl := f[0], f[1], f[2], f[3]
	perChunk := func(v func(figures) float64) float64 {
		return ((v(pl) - v(al)) - (v(ps) - v(as))) / float64(n)
	}
	b.ReportMetric(pl.wall, "ns/op")
	b.ReportMetric(float64(n), "chunks")
	b.ReportMetric(perChunk(func(f figures) float64 { return f.wall }), "chunk-ns")
	b.ReportMetric(perChunk(func(f figures) float64 { return f.thread }), "chunk-thread-ns")
	b.ReportMetric(perChunk(func(f figures) float64 { return f.allocs }), "chunk-allocs")
	b.ReportMetric((al.thread-as.thread)/float64(n), "bare-chunk-thread-ns")
	b.ReportMetric((al.allocs-as.allocs)/float64(n), "bare-chunk-allocs")
	b.ReportMetric(ps.allocs-as.allocs, "stream-allocs-diff")
}

// BenchmarkFloor splits the failsafe row's preset by what it is made of,
// each row on one locked thread (cpu-ns/op), the model answering at once:
//
//	go -C bench test -run '^$' -bench '^BenchmarkFloor$' -count=3 .
//
// preset with and without its deadline; noclient without the client
// limiter; noclient/oneroute with one route, which the stack calls without
// a group; withdeadline, one context.WithDeadline and its cancel around the
// bare model; failsafe, failsafe-go's four policies. The difference of two
// rows is what the piece between them costs.
func BenchmarkFloor(b *testing.B) {
	ctx := context.Background()
	build := func(deadline time.Duration, client bool, routes int) portico.Model {
		rs := []stack.Route{{Route: portico.Route{Name: "primary", Model: answer}}, {Route: portico.Route{Name: "secondary", Model: answer}}}
		cfg := stack.Config{Routes: rs[:routes], Deadline: deadline, Tracer: noopTracer(b)}
		if client {
			cfg.Client = &ratelimit.Config{Limits: clientLimits()}
		}
		s, err := stack.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name string
		m    portico.Model
	}{
		{"preset/deadline", build(0, true, 2)},
		{"preset/nodeadline", build(-1, true, 2)},
		{"noclient/deadline", build(0, false, 2)},
		{"noclient/nodeadline", build(-1, false, 2)},
		{"noclient/oneroute/deadline", build(0, false, 1)},
		{"noclient/oneroute/nodeadline", build(-1, false, 1)},
	} {
		b.Run(c.name, func(b *testing.B) { serial(b, func() { c.m.Generate(ctx, tableReq) }) })
	}
	b.Run("withdeadline", func(b *testing.B) { serial(b, func() { withDeadline(ctx) }) })
	fs4 := failsafePipeline(answer, false)
	b.Run("failsafe", func(b *testing.B) { serial(b, func() { fs4(ctx) }) })
}

// sinkTime keeps the clock row's reading live, so the compiler cannot drop it.
var sinkTime time.Time
