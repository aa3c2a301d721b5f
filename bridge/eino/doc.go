// Package eino bridges Portico and CloudWeGo's eino
// (github.com/cloudwego/eino) both ways.
//
// [ChatModel] is a Portico [portico.Model] (a stack built by package stack,
// or any chain of layers) as an eino model.ToolCallingChatModel, so that
// eino's chains, graphs and agents call through Portico's limits, retries,
// breakers, fallback and validation. Messages (text and image parts, tool
// calls and results), tools (their JSON Schema), MaxTokens, Temperature,
// TopP and Stop map to the [portico.Request] (the sampling options in
// Request.Extra under the OpenAI names the adapters read); the tenant a call
// is made for and its priority come from the context ([portico.WithIdentity],
// [portico.WithPriority]). Stream returns once
// the first chunk arrived or the call ended, so an error before any chunk
// (a refusal, every route failing) is Stream's own error, classified as
// Portico classifies it; an error after a chunk ends the stream.
//
// [Model] is an eino BaseChatModel (a client of any provider eino-ext
// supports) as a Portico Model, so that Portico's layers wrap it. eino
// leaves errors to each implementation, so they arrive unclassified: the
// context's end is Canceled or Deadline, and anything else is Permanent
// (Portico's rule for an error nobody classified, [portico.ClassOf]) unless
// [Model.Classify] says otherwise.
//
// Reasoning text crosses both ways (Message.ReasoningContent and
// [portico.Response.Thoughts]); the opaque blocks a provider needs back do
// not, since eino's messages do not carry them portably.
package eino
