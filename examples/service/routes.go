package main

import (
	"context"
	"errors"
	"os"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/anthropic"
	"github.com/portico-llm/portico/provider/gemini"
	"github.com/portico-llm/portico/provider/openai"
)

// The routes, in fallback order.
const (
	routeOpenAI = iota
	routeAnthropic
	routeGemini
	numRoutes
)

// route is one route's flags' defaults and how to reach its provider: the
// real endpoint at url (its key from the environment), or a fake started in
// process when url is empty. A fake's stop is not nil.
type route struct {
	name, title, model, example, keyVar string
	// in and out are the default model's list prices, in USD per million
	// input and output tokens.
	in, out float64
	open    func(ctx context.Context, url, model string) (m portico.Model, stop func(), err error)
}

var routes = [numRoutes]route{
	{name: "openai", title: "OpenAI", model: "gpt-4o-mini", example: "https://api.openai.com/v1/", keyVar: "OPENAI_API_KEY", in: 0.15, out: 0.60, open: openOpenAI},
	{name: "anthropic", title: "Anthropic", model: "claude-haiku-4-5", example: "https://api.anthropic.com/", keyVar: "ANTHROPIC_API_KEY", in: 1, out: 5, open: openAnthropic},
	{name: "gemini", title: "Gemini", model: "gemini-2.5-flash", example: "https://generativelanguage.googleapis.com/", keyVar: "GEMINI_API_KEY", in: 0.30, out: 2.50, open: openGemini},
}

// The fakes' pace: about 100 ms per answer of 32 tokens.
const (
	latency      = 10 * time.Millisecond
	ttft         = 30 * time.Millisecond
	tps          = 500
	outputTokens = 32
)

// openOpenAI reaches OpenAI at url, or a fake that answers 503 to 10% of
// calls (retried, then the next route).
func openOpenAI(_ context.Context, url, model string) (portico.Model, func(), error) {
	if url != "" {
		return openai.New(openai.Config{Model: model}, openaisdk.WithBaseURL(url)), nil, nil
	}
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{
		Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens,
		Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 0.10}},
	}}})
	if err != nil {
		return nil, nil, err
	}
	m := openai.New(openai.Config{Model: model}, openaisdk.WithBaseURL(srv.BaseURL()), openaisdk.WithAPIKey("fake"), openaisdk.WithHTTPClient(srv.Client()))
	return m, srv.Close, nil
}

// openAnthropic reaches Anthropic at url, or a fake that answers 529
// overloaded to 5% of calls.
func openAnthropic(_ context.Context, url, model string) (portico.Model, func(), error) {
	if url != "" {
		return anthropic.New(anthropic.Config{Model: model}, anthropicsdk.WithBaseURL(url)), nil, nil
	}
	srv, err := fakeanthropic.Start(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{
		Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens,
		Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 529, Fraction: 0.05}},
	}}})
	if err != nil {
		return nil, nil, err
	}
	m := anthropic.New(anthropic.Config{Model: model}, anthropicsdk.WithBaseURL(srv.BaseURL()), anthropicsdk.WithAPIKey("fake"), anthropicsdk.WithHTTPClient(srv.Client()))
	return m, srv.Close, nil
}

// openGemini reaches the Gemini API at url, or a fake that always answers.
func openGemini(ctx context.Context, url, model string) (portico.Model, func(), error) {
	if url != "" {
		m, err := gemini.New(ctx, gemini.Config{Model: model}, genai.ClientConfig{HTTPOptions: genai.HTTPOptions{BaseURL: url}})
		return m, nil, err
	}
	srv, err := fakegemini.Start(fakegemini.Config{Models: []fakegemini.ModelConfig{{
		Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens,
	}}})
	if err != nil {
		return nil, nil, err
	}
	m, err := gemini.New(ctx, gemini.Config{Model: model}, genai.ClientConfig{APIKey: "fake", HTTPClient: srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL()}})
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	return m, srv.Close, nil
}

// openRoute opens route i at url, checking first that a real endpoint has
// its key.
func openRoute(ctx context.Context, i int, url, model string) (portico.Model, func(), error) {
	r := &routes[i]
	if url != "" && os.Getenv(r.keyVar) == "" {
		return nil, nil, errors.New("-" + r.name + "-url needs " + r.keyVar)
	}
	return r.open(ctx, url, model)
}
