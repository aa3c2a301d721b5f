package main

import (
	"context"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// prices are the default models' list prices, by dial's index, in USD per
// million input and output tokens.
var prices = [dial.N]struct{ in, out float64 }{{0.15, 0.60}, {1, 5}, {0.30, 2.50}}

// The fakes' pace: about 100 ms per answer of 32 tokens.
const (
	latency      = 10 * time.Millisecond
	ttft         = 30 * time.Millisecond
	tps          = 500
	outputTokens = 32
)

// fakes start each route's fake: OpenAI's answers 503 to 10% of calls
// (retried, then the next route), Anthropic's 529 overloaded to 5%,
// Gemini's always answers.
var fakes = [dial.N]func(ctx context.Context, model string) (portico.Model, func(), error){
	func(_ context.Context, model string) (portico.Model, func(), error) {
		srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{
			Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens,
			Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 0.10}},
		}}})
		if err != nil {
			return nil, nil, err
		}
		return dial.OverOpenAI(srv, model), srv.Close, nil
	},
	func(_ context.Context, model string) (portico.Model, func(), error) {
		srv, err := fakeanthropic.Start(fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{
			Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens,
			Faults: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 529, Fraction: 0.05}},
		}}})
		if err != nil {
			return nil, nil, err
		}
		return dial.OverAnthropic(srv, model), srv.Close, nil
	},
	func(ctx context.Context, model string) (portico.Model, func(), error) {
		srv, err := fakegemini.Start(fakegemini.Config{Models: []fakegemini.ModelConfig{{
			Name: model, Latency: latency, TTFT: ttft, TokensPerSecond: tps, OutputTokens: outputTokens,
		}}})
		if err != nil {
			return nil, nil, err
		}
		m, err := dial.OverGemini(ctx, srv, model)
		return m, srv.Close, err
	},
}

// openRoute opens route i: the real endpoint at url (its key from the
// environment), or a fake started in process when url is empty, whose
// stop is then not nil.
func openRoute(ctx context.Context, i int, url, model string) (portico.Model, func(), error) {
	if url != "" {
		m, err := dial.Real(ctx, i, url, model)
		return m, nil, err
	}
	return fakes[i](ctx, model)
}
