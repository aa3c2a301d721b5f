package anthropic_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// sonnet is Claude Sonnet 4.5 as Anthropic's price page lists it
// (https://docs.claude.com/en/docs/about-claude/pricing, "Model pricing",
// per million tokens): base input $3, 5-minute cache writes $3.75 (1.25 x),
// 1-hour cache writes $6 (2 x), cache hits $0.30 (0.1 x), output $15.
var sonnet = portico.Capabilities{
	InputPrice: 3e-6, CacheWritePrice: 3.75e-6, CacheWrite1hPrice: 6e-6,
	CachedInputPrice: 0.3e-6, OutputPrice: 15e-6,
}

// words returns a user message of n input tokens as the fake counts them:
// n-3 words plus 3 for the message.
func words(n int) portico.Message {
	return portico.Text(portico.RoleUser, strings.Repeat("w ", n-3))
}

// TestCostMatchesTheBill: Response.Cost through the preset equals
// Anthropic's bill, worked from the price page, for the usage the fake
// reports in the API's own shape (message.usage with cache_creation's
// ephemeral_5m_input_tokens and ephemeral_1h_input_tokens), unstreamed
// and streamed. The first case is the issue's: a 100,000-token cache
// write was priced $0.3015 (writes summed into input at the input price)
// where the bill is $0.3765.
func TestCostMatchesTheBill(t *testing.T) {
	cases := []struct {
		name                       string
		input, write, write1h, hit int // whole input; the parts of it written and read
		output                     int
		bill                       float64 // dollars, from the price page
		usage                      portico.Usage
	}{
		// 100,000 x $3.75 + 100 x $3 + 80 x $15, per million.
		{"cache write 5m", 100_100, 100_000, 0, 0, 80, 0.3765,
			portico.Usage{InputTokens: 100_100, OutputTokens: 80, CacheWriteTokens: 100_000}},
		// 100,000 x $6 + 100 x $3 + 80 x $15.
		{"cache write 1h", 100_100, 100_000, 100_000, 0, 80, 0.6015,
			portico.Usage{InputTokens: 100_100, OutputTokens: 80, CacheWriteTokens: 100_000, CacheWrite1hTokens: 100_000}},
		// 100,000 x $0.30 + 100 x $3 + 80 x $15.
		{"cache read", 100_100, 0, 0, 100_000, 80, 0.0315,
			portico.Usage{InputTokens: 100_100, OutputTokens: 80, CachedInputTokens: 100_000, LimitExemptTokens: 100_000}},
		// 10,000 x $3 + 2,000 x $15.
		{"plain input and output", 10_000, 0, 0, 0, 2_000, 0.06,
			portico.Usage{InputTokens: 10_000, OutputTokens: 2_000}},
		// 40,000 x $0.30 + 10,000 x $6 + 20,000 x $3.75 + 500 x $3 + 1,000 x $15.
		{"read, both writes, input, output", 70_500, 30_000, 10_000, 40_000, 1_000, 0.1635,
			portico.Usage{InputTokens: 70_500, OutputTokens: 1_000, CachedInputTokens: 40_000, CacheWriteTokens: 30_000, CacheWrite1hTokens: 10_000, LimitExemptTokens: 40_000}},
	}
	for _, tc := range cases {
		for _, streamed := range []bool{false, true} {
			name := tc.name
			if streamed {
				name += " streamed"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					_, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: "claude-sonnet-4-5",
						OutputTokens: tc.output, CacheReadInputTokens: tc.hit, CacheWriteInputTokens: tc.write, CacheWrite1hInputTokens: tc.write1h}}})
					s, err := stack.New(stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "anthropic", Model: m, ModelName: "claude-sonnet-4-5", Capabilities: sonnet}}}})
					if err != nil {
						t.Fatal(err)
					}
					req := &portico.Request{Messages: []portico.Message{words(tc.input)}, MaxOutputTokens: 4096}
					if streamed {
						req.OnChunk = func(portico.Chunk) error { return nil }
					}
					resp, err := s.Generate(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					if resp.Usage != tc.usage {
						t.Errorf("Usage = %+v, want %+v", resp.Usage, tc.usage)
					}
					if !sameBill(resp.Cost, tc.bill) {
						t.Errorf("Cost = $%.10f, want the bill $%.4f", resp.Cost, tc.bill)
					}
				})
			})
		}
	}
}

// sameBill reports whether cost is bill to a millionth of a cent: the sum
// of products of float prices carries only rounding errors far below.
func sameBill(cost, bill float64) bool { return math.Round(cost*1e8) == math.Round(bill*1e8) }

// TestLimiterLeavesOutCacheReads: Anthropic's input-tokens-per-minute limit
// counts no cache reads on current models ("only uncached input tokens
// count towards your ITPM rate limits",
// https://docs.claude.com/en/api/rate-limits), so a limiter of 10,000
// tokens a minute that admitted a 9,000-token prompt, 8,800 of it read
// from the cache, settles on 200 input and 50 output tokens and admits the
// same call again at once; on a Claude 3 model, whose limit counts cache
// reads, the second call waits for the bucket to refill.
func TestLimiterLeavesOutCacheReads(t *testing.T) {
	for _, tc := range []struct {
		model  string
		second bool // the second call is admitted at once
	}{{"claude-sonnet-4-5", true}, {"claude-3-5-haiku-20241022", false}} {
		t.Run(tc.model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, m := startPipe(t, fakeanthropic.Config{Models: []fakeanthropic.ModelConfig{{Name: tc.model, OutputTokens: 50, CacheReadInputTokens: 8_800}}})
				lim, err := ratelimit.New(ratelimit.Config{
					Limits:    ratelimit.Limits{Tokens: 10_000},
					Estimator: portico.EstimatorFunc(func(*portico.Request) int { return 9_000 }),
				})
				if err != nil {
					t.Fatal(err)
				}
				model := lim.Wrap(m)
				req := &portico.Request{Model: tc.model, Messages: []portico.Message{words(9_000)}, MaxOutputTokens: 100}
				resp, err := model.Generate(t.Context(), req)
				if err != nil || resp.Usage.Limited() != map[bool]int{true: 250, false: 9_050}[tc.second] {
					t.Fatalf("first call = %+v, %v; want usage limited to %d", resp, err, map[bool]int{true: 250, false: 9_050}[tc.second])
				}
				_, err = model.Generate(t.Context(), req)
				if admitted := err == nil; admitted != tc.second || !admitted && !errors.Is(err, portico.ErrRateLimited) {
					t.Errorf("second call: %v; want admitted %v", err, tc.second)
				}
			})
		})
	}
}
