package portico_test

import (
	"math"
	"testing"

	"github.com/portico-llm/portico"
)

// The prices of the table, per token, from the providers' price pages:
//   - Claude Sonnet 4.5 (https://docs.claude.com/en/docs/about-claude/pricing):
//     input $3, 5-minute cache writes $3.75, 1-hour cache writes $6, cache
//     hits $0.30, output $15 per million tokens;
//   - GPT-4.1 (https://openai.com/api/pricing): input $2, cached input
//     $0.50, output $8; o4-mini: input $1.10, cached input $0.275, output
//     $4.40, reasoning tokens billed as output
//     (https://platform.openai.com/docs/guides/reasoning, "reasoning
//     tokens ... are billed as output tokens");
//   - Gemini 2.5 Flash (https://ai.google.dev/gemini-api/docs/pricing):
//     input $0.30, context caching $0.03, output $2.50 "including thinking
//     tokens".
var (
	sonnet45 = portico.Capabilities{InputPrice: 3e-6, CacheWritePrice: 3.75e-6, CacheWrite1hPrice: 6e-6, CachedInputPrice: 0.3e-6, OutputPrice: 15e-6}
	gpt41    = portico.Capabilities{InputPrice: 2e-6, CachedInputPrice: 0.5e-6, OutputPrice: 8e-6}
	o4mini   = portico.Capabilities{InputPrice: 1.1e-6, CachedInputPrice: 0.275e-6, OutputPrice: 4.4e-6}
	flash25  = portico.Capabilities{InputPrice: 0.3e-6, CachedInputPrice: 0.03e-6, OutputPrice: 2.5e-6}
)

// TestCostTable: Capabilities.Cost of each case's usage, as the adapters
// report it, is the provider's bill worked from its price page, to a
// millionth of a cent. The adapters' tests check the same usage from each
// provider's wire format and Response.Cost through the preset.
func TestCostTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		caps  *portico.Capabilities
		usage portico.Usage
		bill  float64
	}{
		// 100,000 x 3.75 + 100 x 3 + 80 x 15, per million: not $0.3015, the
		// price of the writes at the input price.
		{"anthropic cache write 5m", &sonnet45, portico.Usage{InputTokens: 100_100, OutputTokens: 80, CacheWriteTokens: 100_000}, 0.3765},
		// 100,000 x 6 + 100 x 3 + 80 x 15.
		{"anthropic cache write 1h", &sonnet45, portico.Usage{InputTokens: 100_100, OutputTokens: 80, CacheWriteTokens: 100_000, CacheWrite1hTokens: 100_000}, 0.6015},
		// 100,000 x 0.30 + 100 x 3 + 80 x 15.
		{"anthropic cache read", &sonnet45, portico.Usage{InputTokens: 100_100, OutputTokens: 80, CachedInputTokens: 100_000}, 0.0315},
		// 10,000 x 3 + 2,000 x 15.
		{"anthropic plain input, output", &sonnet45, portico.Usage{InputTokens: 10_000, OutputTokens: 2_000}, 0.06},
		// 40,000 x 0.30 + 10,000 x 6 + 20,000 x 3.75 + 500 x 3 + 1,000 x 15.
		{"anthropic read, both writes", &sonnet45, portico.Usage{InputTokens: 70_500, OutputTokens: 1_000, CachedInputTokens: 40_000, CacheWriteTokens: 30_000, CacheWrite1hTokens: 10_000}, 0.1635},
		// 20,000 x 2 + 80,000 x 0.50 + 500 x 8.
		{"openai cached input", &gpt41, portico.Usage{InputTokens: 100_000, OutputTokens: 500, CachedInputTokens: 80_000}, 0.084},
		// 2,000 x 1.10 + 10,000 x 4.40 (9,000 of them reasoning).
		{"openai reasoning output", &o4mini, portico.Usage{InputTokens: 2_000, OutputTokens: 10_000}, 0.0462},
		// 1,000 x 0.30 + (500 + 4,000 thinking) x 2.50.
		{"gemini thinking output", &flash25, portico.Usage{InputTokens: 1_000, OutputTokens: 4_500}, 0.01155},
		// 10,000 x 0.30 + 90,000 x 0.03 + 200 x 2.50.
		{"gemini cache read", &flash25, portico.Usage{InputTokens: 100_000, OutputTokens: 200, CachedInputTokens: 90_000}, 0.0062},
	} {
		if got := tc.caps.Cost(tc.usage); math.Round(got*1e8) != math.Round(tc.bill*1e8) {
			t.Errorf("%s: Cost(%+v) = $%.10f, want the bill $%g", tc.name, tc.usage, got, tc.bill)
		}
	}
}

// TestCostClampsParts: parts larger than the input are clamped to it,
// reads first, and zero prices fall back as the fields say.
func TestCostClampsParts(t *testing.T) {
	c := portico.Capabilities{InputPrice: 1, CacheWritePrice: 2, OutputPrice: 10}
	for _, tc := range []struct {
		u    portico.Usage
		want float64
	}{
		{portico.Usage{InputTokens: 10, CachedInputTokens: 4, CacheWriteTokens: 4, CacheWrite1hTokens: 2}, 2 + 4 + 2*2 + 2*2}, // 1h at CacheWritePrice
		{portico.Usage{InputTokens: 10, CachedInputTokens: 8, CacheWriteTokens: 5}, 8 + 2*2},                                  // writes clamped to 2
		{portico.Usage{InputTokens: 3, CachedInputTokens: 9, OutputTokens: 1}, 3 + 10},                                        // reads clamped to 3
		{portico.Usage{InputTokens: -5, CacheWriteTokens: -1, OutputTokens: -1}, 0},
	} {
		if got := c.Cost(tc.u); got != tc.want {
			t.Errorf("Cost(%+v) = %g, want %g", tc.u, got, tc.want)
		}
	}
}

// TestUsageLimitedAndAdd: Limited leaves out the exempt input, clamped to
// the input; Add sums every field.
func TestUsageLimitedAndAdd(t *testing.T) {
	u := portico.Usage{InputTokens: 100, OutputTokens: 10, ReasoningTokens: 4, CachedInputTokens: 60, CacheWriteTokens: 30, CacheWrite1hTokens: 10, LimitExemptTokens: 60}
	if got := u.Limited(); got != 50 {
		t.Errorf("Limited() = %d, want 50", got)
	}
	if got := (portico.Usage{InputTokens: 5, OutputTokens: 1, LimitExemptTokens: 9}).Limited(); got != 1 {
		t.Errorf("Limited() with exempt above the input = %d, want 1", got)
	}
	want := portico.Usage{InputTokens: 200, OutputTokens: 20, ReasoningTokens: 8, CachedInputTokens: 120, CacheWriteTokens: 60, CacheWrite1hTokens: 20, LimitExemptTokens: 120}
	if got := u.Add(u); got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}
