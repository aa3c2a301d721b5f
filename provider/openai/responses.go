package openai

import (
	"cmp"
	"context"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// ResponsesConfig configures a [Responses] model. The zero value is
// usable: requests must then name their model, and no state is kept at
// OpenAI.
type ResponsesConfig struct {
	// Model is the model asked for when a Request leaves Model empty
	// ("gpt-5-mini"). Empty means requests must name one; a request that
	// does not fails with a Permanent error.
	Model string
	// Store keeps each response at OpenAI ("store": true) and names it in
	// a Thought of Kind "response" on the answer, so that the next turn
	// sends previous_response_id and only the messages after that answer
	// instead of the whole conversation; see "Keeping state" in the
	// package doc. False (the default) sends "store": false and, when
	// the request reasons (Request.Reasoning, or Thoughts of its
	// [Responses.Dialect] in its messages), asks for the encrypted
	// reasoning items ("include": ["reasoning.encrypted_content"]) that
	// the next request carries back, so that nothing is kept at OpenAI.
	Store bool
	// Account names the OpenAI organization (or project) whose key the
	// route uses, by a name of the user's choosing, never the key: the
	// encrypted content of reasoning items and stored responses are valid
	// only there, so the route's Thoughts carry it in their Dialect
	// ("openai-responses:NAME", see [Responses.Dialect]) and a route of
	// another account leaves them out. Empty means "openai-responses":
	// every route with an empty Account is taken to share one.
	Account string
	// IncludeProviderMessage is [Config.IncludeProviderMessage].
	IncludeProviderMessage bool
	// MaxResponseBytes is [Config.MaxResponseBytes]: zero means
	// [DefaultMaxResponseBytes], negative no limit.
	MaxResponseBytes int64
}

// Responses is a [portico.Model] over OpenAI's Responses API (POST
// /v1/responses, the SDK's client.Responses). It is safe for concurrent
// use; like [Model], it makes exactly one HTTP request per Generate and
// classifies every error by the table in the package doc.
type Responses struct {
	cfg     ResponsesConfig
	dialect string
	chat    *Model // the client, the body limit and the one classifier
}

// NewResponses returns a Responses model calling the API through an SDK
// client built from opts, as [New] does (option.WithMaxRetries(0) is
// appended after opts).
func NewResponses(cfg ResponsesConfig, opts ...option.RequestOption) *Responses {
	chat := New(Config{Model: cfg.Model, IncludeProviderMessage: cfg.IncludeProviderMessage, MaxResponseBytes: cfg.MaxResponseBytes}, opts...)
	d := ResponsesDialect
	if cfg.Account != "" {
		d += ":" + cfg.Account
	}
	return &Responses{cfg: cfg, dialect: d, chat: chat}
}

// Dialect returns the [portico.Thought].Dialect of the Thoughts r returns
// and alone sends back: [ResponsesDialect], followed by ":" and
// [ResponsesConfig].Account when it is set.
func (r *Responses) Dialect() string { return r.dialect }

// Generate sends req as one response of the Responses API, streamed when
// req.OnChunk is set, and returns the answer: text, function calls,
// reasoning items as Thoughts of its [Responses.Dialect] (and, with
// ResponsesConfig.Store, a last Thought of Kind "response" naming the
// stored response), finish reason, usage
// (cached input and reasoning tokens included), the response's id and
// model, and the provider's rate-limit headers. Streamed text deltas
// reach OnChunk as they arrive, and an empty Chunk for each function call
// and each of its argument deltas; reasoning summary deltas reach it as
// Chunk.Reasoning when req.Reasoning.Stream asks, and are progress only
// otherwise, as every other event is (response.created, an item's
// boundary).
//
// Every error is a [*portico.Error], classified as [Model.Generate]'s
// are; an error event or a response.failed event inside the stream is
// classified by its code and message, and, like any error before a chunk
// reached the caller, leaves the request free to move on to another
// route. A request that cannot be encoded is Permanent, without any HTTP
// request. Safe for concurrent use.
func (r *Responses) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	m := r.chat
	model, err := adapt.ModelName(req, r.cfg.Model)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, m.classify(ctx, ctx.Err(), &adapt.Exchange{}, model)
	}
	params, opts, err := r.params(req, model)
	if err := unsendable(err, req.Schema, model); err != nil {
		return nil, err
	}
	x := &adapt.Exchange{Limit: m.limit, TooLarge: ErrTooLarge}
	opts = append(opts, option.WithMiddleware(x.Middleware), option.WithMaxRetries(0))
	if req.Streaming() {
		return r.stream(ctx, req, params, opts, x, model)
	}
	resp, err := m.client.Responses.New(ctx, params, opts...)
	if err != nil {
		return nil, m.classify(ctx, err, x, model)
	}
	if resp == nil { // the body was JSON null
		return nil, malformed(x, model, "no response")
	}
	if !x.Whole(resp.RawJSON()) {
		return nil, malformed(x, model, "data after the response")
	}
	return r.answer(resp, x, model)
}

// answer reads the Response from a finished response object: its status
// and error, output items and usage.
func (r *Responses) answer(resp *responses.Response, x *adapt.Exchange, model string) (*portico.Response, error) {
	if why := checkResponse(resp); why != "" {
		return nil, malformed(x, model, why)
	}
	switch resp.Status {
	case responses.ResponseStatusFailed:
		return nil, r.failed(resp, x, model)
	case responses.ResponseStatusCompleted, responses.ResponseStatusIncomplete:
	default: // queued, in_progress (a background response), cancelled
		return nil, malformed(x, model, "response not finished")
	}
	out := &portico.Response{
		ID:        resp.ID,
		Model:     cmp.Or(string(resp.Model), model),
		Usage:     responsesUsage(&resp.Usage),
		RateLimit: ParseRateLimit(x.Header),
	}
	var text []byte
	for i := range resp.Output {
		it := &resp.Output[i]
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				if c.Type == "output_text" {
					text = append(text, c.Text...)
				}
			}
		case "function_call":
			out.ToolCalls = append(out.ToolCalls, portico.ToolCall{ID: it.CallID, Name: it.Name, Arguments: []byte(it.Arguments.OfString)})
		case "reasoning":
			out.Thoughts = append(out.Thoughts, thought(it, r.dialect))
		}
	}
	if r.cfg.Store {
		out.Thoughts = append(out.Thoughts, portico.Thought{Dialect: r.dialect, Kind: storedKind, ID: resp.ID})
	}
	out.Text = string(text)
	out.FinishReason = responsesFinish(resp, len(out.ToolCalls) > 0)
	return out, nil
}

// thought is the Thought of a reasoning item: its summary's parts (else
// its reasoning text's) joined by blank lines, and its encrypted content.
func thought(it *responses.ResponseOutputItemUnion, dialect string) portico.Thought {
	var parts []string
	for _, s := range it.Summary {
		parts = append(parts, s.Text)
	}
	if len(parts) == 0 {
		for _, c := range it.Content {
			if c.Type == "reasoning_text" {
				parts = append(parts, c.Text)
			}
		}
	}
	return portico.Thought{Dialect: dialect, Kind: "reasoning", ID: it.ID, Text: strings.Join(parts, "\n\n"), Signature: it.EncryptedContent}
}

// failed is the error of a response whose status is "failed": what its
// error object says, as an error event inside a 200 answer.
func (r *Responses) failed(resp *responses.Response, x *adapt.Exchange, model string) error {
	e := &resp.Error
	return r.chat.inBand(errorFields{Code: string(e.Code), Message: e.Message, Type: e.Type, Param: e.Param, Found: true}, x, model)
}

// responsesFinish maps a finished response onto a FinishReason: an
// incomplete one by its reason (max_output_tokens is FinishLength,
// content_filter FinishContentFilter, another passes through), a
// completed one with function calls FinishToolCalls, else FinishStop.
func responsesFinish(resp *responses.Response, calls bool) portico.FinishReason {
	switch {
	case resp.Status == responses.ResponseStatusIncomplete:
		switch why := resp.IncompleteDetails.Reason; why {
		case "max_output_tokens", "":
			return portico.FinishLength
		case "content_filter":
			return portico.FinishContentFilter
		default:
			return portico.FinishReason(why)
		}
	case calls:
		return portico.FinishToolCalls
	}
	return portico.FinishStop
}

// responsesUsage reads a response's usage: input tokens (cache reads and
// writes included, and counted apart: input_tokens_details.cached_tokens
// and cache_write_tokens), output tokens (reasoning ones included, and
// counted apart: output_tokens_details.reasoning_tokens).
func responsesUsage(u *responses.ResponseUsage) portico.Usage {
	return portico.Usage{
		InputTokens:       int(u.InputTokens),
		OutputTokens:      int(u.OutputTokens),
		ReasoningTokens:   int(u.OutputTokensDetails.ReasoningTokens),
		CachedInputTokens: int(u.InputTokensDetails.CachedTokens),
		CacheWriteTokens:  int(u.InputTokensDetails.CacheWriteTokens),
	}
}

// checkResponse returns why a finished response object is not one, or "".
func checkResponse(resp *responses.Response) string {
	switch {
	case !allTyped(tString, resp.JSON.ID, resp.JSON.Model, resp.JSON.Status) || !typed(resp.JSON.Output, tArray) || !typed(resp.JSON.Usage, tObject):
		return "mistyped response"
	case !usageWellFormed(&resp.Usage):
		return "mistyped usage"
	case resp.ID == "" || resp.Status == "":
		return "no id or status"
	}
	for i := range resp.Output {
		if why := checkOutputItem(&resp.Output[i]); why != "" {
			return why
		}
	}
	return ""
}

// usageWellFormed reports whether u's token counts are all integers and
// none is negative.
func usageWellFormed(u *responses.ResponseUsage) bool {
	return allTyped(tInt, u.JSON.InputTokens, u.JSON.OutputTokens, u.InputTokensDetails.JSON.CachedTokens, u.InputTokensDetails.JSON.CacheWriteTokens, u.OutputTokensDetails.JSON.ReasoningTokens) &&
		min(u.InputTokens, u.OutputTokens, u.InputTokensDetails.CachedTokens, u.InputTokensDetails.CacheWriteTokens, u.OutputTokensDetails.ReasoningTokens) >= 0
}

// checkOutputItem returns why an output item is mistyped, or "".
func checkOutputItem(it *responses.ResponseOutputItemUnion) string {
	if !allTyped(tString, it.JSON.Type, it.JSON.ID, it.JSON.CallID, it.JSON.Name, it.JSON.EncryptedContent) || !allTyped(tArray, it.JSON.Content, it.JSON.Summary) {
		return "mistyped output item"
	}
	if it.Type == "function_call" && !typed(it.JSON.Arguments, tString) {
		return "mistyped function call"
	}
	return ""
}
