// Package langchaingo bridges Portico and langchaingo
// (github.com/tmc/langchaingo) both ways.
//
// [LLM] is a Portico [portico.Model] (a stack built by package stack, or any
// chain of layers) as a langchaingo llms.Model, so that chains, agents and
// tools built on langchaingo call through Portico's limits, retries,
// breakers, fallback and validation. Each call's messages, tools, JSON mode,
// MaxTokens, StreamingFunc and StreamingReasoningFunc map to the
// [portico.Request]; temperature, top_p, seed, stop words and penalties go
// to Request.Extra under the OpenAI names the adapters read. The tenant a
// call is made for and its priority come from the context
// ([portico.WithIdentity], [portico.WithPriority]). An error is the
// stack's *portico.Error, classified as Portico classifies it.
//
// [Model] is a langchaingo llms.Model (a client of any provider langchaingo
// supports) as a Portico Model, so that Portico's layers wrap it. Its errors
// are classified from langchaingo's llms.Error codes (a rate limit is
// RateLimited, an authentication failure Unusable, a bad request
// Incompatible, ...); an error without a code is Permanent, Portico's rule
// for an error nobody classified ([portico.ClassOf]).
//
// What does not cross: langchaingo has no request identity, contract or
// hedging flag (set the identity with [portico.WithIdentity], the rest with a layer); a langchaingo
// model reports no rate-limit headers, so a Portico limiter over [Model]
// learns nothing from them. Reasoning text crosses both ways
// (ContentChoice.ReasoningContent and [portico.Response.Reasoning]); the
// opaque blocks a provider needs back do not, since langchaingo's messages
// cannot carry them.
package langchaingo
