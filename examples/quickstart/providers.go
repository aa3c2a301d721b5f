package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// starts start each route's endpoint, by dial's index: the real one at url,
// or a fake.
var starts = [dial.N]func(ctx context.Context, url, model string, fo fakeOptions) (*endpoint, error){
	startOpenAI, startAnthropic, startGemini,
}

// fakeOptions say how to start a route's fake server.
type fakeOptions struct {
	seed uint64
	// faults, when non-nil, replace the fake's own faults and script: the
	// chaos drill's menu (chaosFaults).
	faults []fakeopenai.Fault
	// pipe serves over net.Pipe, inside the caller's synctest bubble, instead
	// of loopback.
	pipe bool
}

// start starts a fake server of cfg with Start, or StartPipe when fo.pipe.
func start[C, S any](fo fakeOptions, cfg C, loopback, pipe func(C) (S, error)) (S, error) {
	if fo.pipe {
		return pipe(cfg)
	}
	return loopback(cfg)
}

// endpoint is a route's adapter and, on a fake, the server behind it.
type endpoint struct {
	model portico.Model
	about string     // one line saying what it is
	close func()     // stops the fake; safe to call twice
	count func() int // requests the fake saw for the model; -1 on a real endpoint
	// faults counts the faults the fake injected, by kind; nil on a real
	// endpoint.
	faults func() map[fakeopenai.FaultKind]int
}

// faultCounts counts the faults of a fake's recorded requests.
func faultCounts[R any](requests func() []R, kind func(R) fakeopenai.FaultKind) func() map[fakeopenai.FaultKind]int {
	return func() map[fakeopenai.FaultKind]int {
		m := map[fakeopenai.FaultKind]int{}
		for _, r := range requests() {
			if k := kind(r); k != fakeopenai.NoFault {
				m[k]++
			}
		}
		return m
	}
}

// realEndpoint is route i's endpoint at url, a real one.
func realEndpoint(ctx context.Context, i int, url, model string) (*endpoint, error) {
	m, err := dial.Real(ctx, i, url, model)
	if err != nil {
		return nil, err
	}
	return &endpoint{model: m, about: fmt.Sprintf("%-9s %s at %s", dial.Providers[i].Title, model, url), close: func() {}, count: func() int { return -1 }}, nil
}

// systemTokens is the system prompt's length as the fakes count tokens
// (its words), which the OpenAI and Gemini fakes report as cached on every
// call; the Anthropic fake caches it from its breakpoint.
const systemTokens = 6

// reasoningTokens is what the OpenAI and Gemini fakes report their models
// thought per answer (completion_tokens_details.reasoning_tokens,
// thoughtsTokenCount), billed as output, as reasoning models do.
const reasoningTokens = 24

// pace is the fakes' speed: about 60 ms per answer of 16 tokens.
const (
	latency      = 10 * time.Millisecond
	ttft         = 20 * time.Millisecond
	tps          = 500
	outputTokens = 16
)

// startOpenAI reaches OpenAI, or starts a fake whose model answers 503s,
// 429s with retry-after-ms and stalls that only an attempt timeout ends. It
// starts rate-limited: its first 12 requests get a 429 asking for 150 ms,
// longer than the group waits in place (Fallback.WaitInPlace, 50 ms here), so
// they move on to Anthropic at once (the fallback across dialects shows in
// every run) and OpenAI cools down for the Retry-After.
func startOpenAI(ctx context.Context, url, model string, fo fakeOptions) (*endpoint, error) {
	if url != "" {
		return realEndpoint(ctx, dial.OpenAI, url, model)
	}
	busy := fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfterMsHeader: 150 * time.Millisecond}
	mc := fakeopenai.ModelConfig{
		Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens, ToolCalls: true,
		CachedInputTokens: systemTokens, // as if its cache held the system prompt
		ReasoningTokens:   reasoningTokens,
		Script:            slices.Repeat([]fakeopenai.Fault{busy}, 12),
		Faults: []fakeopenai.Fault{
			{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 0.10},
			{Kind: fakeopenai.FaultStatus, Status: 429, Fraction: 0.05, RetryAfterMsHeader: 40 * time.Millisecond},
			{Kind: fakeopenai.FaultStallBeforeHeaders, Fraction: 0.03},
		},
	}
	about := "its first 12 requests 429 (retry in 150 ms), then 503 (10%), 429 with retry-after-ms (5%), stalls (3%)"
	if fo.faults != nil {
		mc.Script, mc.Faults, about = nil, fo.faults, chaosAbout(fo.faults)
	}
	srv, err := start(fo, fakeopenai.Config{Seed: fo.seed, Models: []fakeopenai.ModelConfig{mc}}, fakeopenai.Start, fakeopenai.StartPipe)
	if err != nil {
		return nil, err
	}
	return &endpoint{model: dial.OverOpenAI(srv, model), close: srv.Close, count: func() int { return srv.Count(model) },
		faults: faultCounts(srv.Requests, func(r fakeopenai.Request) fakeopenai.FaultKind { return r.Fault }),
		about:  fmt.Sprintf("fake OpenAI    on %s: %s answers %s", srv.URL(), model, about)}, nil
}

// startAnthropic reaches Anthropic, or starts a fake whose model answers 529
// overloaded_error on a fraction of calls (retried). Its first request gets
// a 529 with x-should-retry: false: the provider says not to retry this
// request, so the call moves on to Gemini, which answers in every run, and
// the route's breaker counts it only in its run of consecutive failures
// (advice about one request: it opens nothing alone, and the next answer
// ends the run).
func startAnthropic(ctx context.Context, url, model string, fo fakeOptions) (*endpoint, error) {
	if url != "" {
		return realEndpoint(ctx, dial.Anthropic, url, model)
	}
	noRetry := fakeanthropic.Fault{Kind: fakeanthropic.FaultStatus, Status: 529, ShouldRetry: "false"}
	mc := fakeanthropic.ModelConfig{
		Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens, ToolCalls: true,
		PromptCache: true, MinCacheTokens: 1, // caches the marked system prompt, however short
		Script: []fakeanthropic.Fault{noRetry},
		Faults: []fakeanthropic.Fault{
			{Kind: fakeanthropic.FaultStatus, Status: 529, Fraction: 0.08},
		},
	}
	about := "its first request 529 with x-should-retry: false, then 529 overloaded (8%)"
	if fo.faults != nil {
		mc.Script, mc.Faults, about = nil, fo.faults, chaosAbout(fo.faults)
	}
	srv, err := start(fo, fakeanthropic.Config{Seed: fo.seed, Models: []fakeanthropic.ModelConfig{mc}}, fakeanthropic.Start, fakeanthropic.StartPipe)
	if err != nil {
		return nil, err
	}
	return &endpoint{model: dial.OverAnthropic(srv, model), close: srv.Close, count: func() int { return srv.Count(model) },
		faults: faultCounts(srv.Requests, func(r fakeanthropic.Request) fakeopenai.FaultKind { return r.Fault }),
		about:  fmt.Sprintf("fake Anthropic on %s: %s answers %s", srv.URL(), model, about)}, nil
}

// startGemini reaches the Gemini API, or starts a fake whose model answers
// 429 RESOURCE_EXHAUSTED whose RetryInfo.retryDelay (in the body, not a
// header) is 0.2 s, and 500 INTERNAL.
func startGemini(ctx context.Context, url, model string, fo fakeOptions) (*endpoint, error) {
	if url != "" {
		return realEndpoint(ctx, dial.Gemini, url, model) // the key: GEMINI_API_KEY or GOOGLE_API_KEY
	}
	mc := fakegemini.ModelConfig{
		Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens, ToolCalls: true,
		CachedInputTokens: systemTokens, // implicit caching of the system prompt
		ThoughtsTokens:    reasoningTokens,
		Faults: []fakegemini.Fault{
			{Kind: fakegemini.FaultStatus, Status: 429, Fraction: 0.05, RetryAfter: 200 * time.Millisecond},
			{Kind: fakegemini.FaultStatus, Status: 500, Fraction: 0.03},
		},
	}
	about := "429 RESOURCE_EXHAUSTED with retryDelay (5%), 500 (3%)"
	if fo.faults != nil {
		mc.Faults, about = fo.faults, chaosAbout(fo.faults)
	}
	srv, err := start(fo, fakegemini.Config{Seed: fo.seed, Models: []fakegemini.ModelConfig{mc}}, fakegemini.Start, fakegemini.StartPipe)
	if err != nil {
		return nil, err
	}
	m, err := dial.OverGemini(ctx, srv, model)
	if err != nil {
		return nil, err
	}
	return &endpoint{model: m, close: srv.Close, count: func() int { return srv.Count(model) },
		faults: faultCounts(srv.Requests, func(r fakegemini.Request) fakeopenai.FaultKind { return r.Fault }),
		about:  fmt.Sprintf("fake Gemini    on %s: %s answers %s", srv.URL(), model, about)}, nil
}
