// Package tokencount counts a request's input tokens with OpenAI's
// encodings, o200k_base (GPT-4o, GPT-4.1, GPT-5, the o-series) and
// cl100k_base (GPT-4, GPT-3.5 Turbo, text-embedding-3), as a
// [portico.Estimator] for the limiters, routers and spend budgets that
// reserve N_in before a call.
//
// # The rule
//
// [Estimator.EstimateInputTokens] is OpenAI's count of a chat request
// ("How to count tokens with tiktoken", OpenAI Cookbook): 3 tokens per
// message plus its role's and its content's tokens, 3 more that prime
// the reply. Text parts, plain-text documents, tool calls (name and
// arguments), tool definitions (name, description, parameter schema) and
// the response schema are counted by the encoding; an image part is
// Config.ImageTokens; other media are not counted. Plain text messages
// are counted exactly as the API bills them; tools and schemas, which the
// API renders in a format of its own, within a few tokens each. An
// embedding request is the sum of its inputs' tokens.
//
// # Offline
//
// The encodings are compiled in (github.com/tiktoken-go/tokenizer, pure
// Go, its vocabularies embedded as Go maps, about 4 MB): nothing is
// downloaded at run time, and a binary links them only when it imports
// this package. That is why it is a package of the openai adapter's
// module and not of the core: the core imports no tokenizer.
//
// To count as an Anthropic or Gemini route bills, use their adapters'
// count-tokens endpoints, or let [portico.Calibrated] scale this count
// from the usage those routes report.
package tokencount
