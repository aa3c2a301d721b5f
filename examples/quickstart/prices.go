package main

import (
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/examples/internal/dial"
)

// prices are the routes' default models' prices in US dollars per token,
// from the providers' price pages, so that Response.Cost is what the bill
// would say: gpt-4o-mini $0.15 input, $0.075 cached input, $0.60 output
// per million (https://openai.com/api/pricing); claude-haiku-4-5 $1
// input, $1.25 5-minute and $2 1-hour cache writes, $0.10 cache reads, $5
// output (https://docs.claude.com/en/docs/about-claude/pricing);
// gemini-2.5-flash $0.30 input, $0.03 cached, $2.50 output, thinking
// included (https://ai.google.dev/gemini-api/docs/pricing).
var prices = [dial.N]portico.Capabilities{
	dial.OpenAI:    {InputPrice: 0.15e-6, CachedInputPrice: 0.075e-6, OutputPrice: 0.6e-6},
	dial.Anthropic: {InputPrice: 1e-6, CacheWritePrice: 1.25e-6, CacheWrite1hPrice: 2e-6, CachedInputPrice: 0.1e-6, OutputPrice: 5e-6},
	dial.Gemini:    {InputPrice: 0.3e-6, CachedInputPrice: 0.03e-6, OutputPrice: 2.5e-6},
}
