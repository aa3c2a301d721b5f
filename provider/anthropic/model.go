package anthropic

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/shared/constant"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// Config configures a [Model]. The zero Config is usable: requests must then
// name their model.
type Config struct {
	// Model is the model asked for when a Request leaves Model empty
	// ("claude-sonnet-4-5"). Empty means requests must name one; a request
	// that does not fails with a Permanent error.
	Model string
	// MaxTokens is the max_tokens sent when Request.MaxOutputTokens is 0: the
	// Messages API requires one. Zero means [DefaultMaxTokens]; negative
	// makes [New] panic.
	MaxTokens int
	// IncludeProviderMessage puts the provider's error message into
	// [ProviderError].Message and so into error strings. Off by default,
	// because the API may echo prompt text in its messages.
	IncludeProviderMessage bool
	// MaxResponseBytes bounds the bytes of response body read for one call:
	// the JSON body of an answer or of an HTTP error, or the whole event
	// stream of a streamed answer. A server that sends more gets its
	// connection closed and the call fails with [portico.InvalidResponse]
	// wrapping [ErrTooLarge]. Zero means [DefaultMaxResponseBytes] (64 MiB);
	// a negative value means no limit (the caller's context is then the only
	// bound on an endless stream).
	MaxResponseBytes int64
}

// DefaultMaxTokens is the max_tokens of a request whose MaxOutputTokens is 0
// when [Config.MaxTokens] is 0: 4096, which every current Claude model
// accepts.
const DefaultMaxTokens = 4096

// DefaultMaxResponseBytes is the body limit of a zero [Config.MaxResponseBytes]:
// 64 MiB, far beyond the event stream of a 128k-token answer.
const DefaultMaxResponseBytes = 64 << 20

// Model is a [portico.Model] over Anthropic's Messages API through the
// official SDK, github.com/anthropics/anthropic-sdk-go/v2. It is safe for
// concurrent use.
//
// The SDK's own retries are off: Model makes exactly one HTTP request per
// Generate, so that one layer (package retry) owns retries and counts them
// against its budget. The SDK would otherwise retry twice by default (429,
// 5xx, 529 and connection errors), under every retry layer above it.
type Model struct {
	cfg       Config
	maxTokens int
	limit     int64 // body bytes per call; 0: none
	client    sdk.Client
}

// New returns a Model calling the API through an SDK client built from opts,
// the SDK's own options: option.WithBaseURL, option.WithAPIKey,
// option.WithHTTPClient, option.WithRequestTimeout, option.WithHeader, ...
// As with the SDK's anthropic.NewClient, the ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN
// and ANTHROPIC_BASE_URL environment variables supply defaults that opts
// override.
//
// New appends option.WithMaxRetries(0) after opts, so the SDK never retries
// whatever opts say; see [Model]. It panics when cfg.MaxTokens is negative.
func New(cfg Config, opts ...option.RequestOption) *Model {
	if cfg.MaxTokens < 0 {
		panic("anthropic: negative Config.MaxTokens")
	}
	all := append(slices.Clip(opts), option.WithMaxRetries(0)) // a new array: opts stays the caller's
	maxTokens := cmp.Or(cfg.MaxTokens, DefaultMaxTokens)
	return &Model{cfg: cfg, maxTokens: maxTokens, limit: adapt.MaxBytes(cfg.MaxResponseBytes, DefaultMaxResponseBytes), client: sdk.NewClient(all...)}
}

// Generate sends req as one Messages API call, streamed when req.OnChunk is
// set, and returns the answer: text, tool calls, finish reason, usage (cache
// reads and writes included), the model that answered and the provider's
// rate-limit headers. Streamed text deltas reach OnChunk as they arrive (an
// empty Chunk for each event that only advances a tool call) and add up to
// Response.Text; the package doc says how content and stop reasons map
// ("Answers") and when an unstreamed request is streamed ("Streaming").
//
// Every error is a [*portico.Error], classified by the table in the package
// doc ("Error classes"); HTTP errors and error events wrap a
// [*ProviderError], which wraps the SDK's *anthropic.Error. An OnChunk error
// is returned as is when it is a *portico.Error, else as Canceled wrapping
// it. A request that cannot be encoded is Permanent, without any HTTP
// request. Safe for concurrent use.
func (m *Model) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	model, err := adapt.ModelName(req, m.cfg.Model)
	if err != nil {
		return nil, err
	}
	if err := adapt.NoEmbeddings(req, model); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, m.classify(ctx, ctx.Err(), &adapt.Exchange{}, model, false)
	}
	if err := breakpoints(req); err != nil {
		return nil, err
	}
	files, err := media(req)
	if err != nil {
		return nil, err
	}
	params, err := m.params(req, model)
	if pe, ok := err.(*portico.Error); ok { // classified where it was found
		pe.Model = model
		return nil, pe
	}
	if err != nil {
		return nil, &portico.Error{Class: portico.Permanent, Model: model, Reason: "request not encodable", Err: err}
	}
	x := &adapt.Exchange{Limit: m.limit, TooLarge: ErrTooLarge}
	ctx = adapt.WithExchange(ctx, x)
	opts := []option.RequestOption{watched, noRetries}
	if files {
		opts = append(opts, option.WithHeaderAdd("anthropic-beta", filesBeta))
	}
	// The SDK sends a large max_tokens only streamed; OnChunk is then nil.
	if req.Streaming() || params.MaxTokens > unstreamedSafe && sdkWouldRefuse(params, m.client.Options) {
		return m.stream(ctx, req, params, opts, x, model)
	}
	msg, err := m.client.Messages.New(ctx, params, opts...)
	if err != nil {
		return nil, m.classify(ctx, err, x, model, false)
	}
	return m.answer(msg, x, model)
}

// unstreamedSafe is the largest max_tokens the SDK sends unstreamed to any
// model (client.go's CalculateNonStreamingTimeout: an expected hour per
// 128,000 tokens must stay within ten minutes, and some models have lower
// limits), so that the common call skips the SDK's check and its allocation.
var unstreamedSafe = func() int64 {
	safe := int64(128000 * 10 / 60)
	for _, n := range constant.ModelNonStreamingTokens {
		safe = min(safe, int64(n))
	}
	return safe
}()

// sdkWouldRefuse reports whether the SDK refuses to send p unstreamed.
func sdkWouldRefuse(p sdk.MessageNewParams, opts []option.RequestOption) bool {
	_, err := sdk.CalculateNonStreamingTimeout(int(p.MaxTokens), p.Model, opts)
	return err != nil
}

// answer maps a whole message onto a Response.
func (m *Model) answer(msg *sdk.Message, x *adapt.Exchange, model string) (*portico.Response, error) {
	if msg == nil { // the body was JSON null
		return nil, malformed(x, model, "not a message")
	}
	if !x.Whole(msg.RawJSON()) {
		return nil, malformed(x, model, "data after the message")
	}
	if !wellFormed(msg) || msg.StopReason == "" {
		if err := m.bodyError(msg.RawJSON(), x, model); err != nil {
			return nil, err
		}
		return nil, malformed(x, model, "not a message")
	}
	u := &msg.Usage
	if min(u.InputTokens, u.CacheCreationInputTokens, u.CacheCreation.Ephemeral1hInputTokens, u.CacheReadInputTokens, u.OutputTokens) < 0 {
		return nil, malformed(x, model, "negative token count")
	}
	resp := &portico.Response{
		ID:           msg.ID,
		FinishReason: finishReason(msg.StopReason),
		Model:        cmp.Or(string(msg.Model), model),
		Usage:        usage(model, u.InputTokens, u.CacheCreationInputTokens, u.CacheCreation.Ephemeral1hInputTokens, u.CacheReadInputTokens, u.OutputTokens),
		RateLimit:    ParseRateLimit(x.Header, time.Now()),
	}
	content(resp, msg.Content)
	return resp, nil
}

// content sets resp's text, its text blocks joined, its tool calls and its
// thoughts.
func content(resp *portico.Response, blocks []sdk.ContentBlockUnion) {
	var text strings.Builder
	texts := 0
	for i := range blocks {
		b := &blocks[i]
		if t, ok := thought(string(b.Type), b.Thinking, b.Signature, b.Data); ok {
			resp.Thoughts = append(resp.Thoughts, t)
			continue
		}
		switch b.Type {
		case "text":
			if texts++; texts == 1 {
				resp.Text = b.Text // the common answer: one text block, no copy
				continue
			}
			if texts == 2 {
				text.WriteString(resp.Text)
			}
			text.WriteString(b.Text)
		case "tool_use":
			args := b.Input
			if len(args) == 0 {
				args = []byte("{}")
			}
			resp.ToolCalls = append(resp.ToolCalls, portico.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	if texts > 1 {
		resp.Text = text.String()
	}
}

// malformed is the InvalidResponse error for an answer that is not a message.
func malformed(x *adapt.Exchange, model, reason string) error {
	return x.Malformed(model, reason, ParseRateLimit(x.Header, time.Now()))
}

// finishReason maps Anthropic's stop_reason onto portico's finish reasons;
// see [Model.Generate].
func finishReason(s sdk.StopReason) portico.FinishReason {
	switch s {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return portico.FinishStop
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return portico.FinishLength
	case sdk.StopReasonToolUse:
		return portico.FinishToolCalls
	case sdk.StopReasonRefusal:
		return portico.FinishContentFilter
	}
	return portico.FinishReason(s)
}

// usage maps Anthropic's usage onto portico's. Anthropic's input_tokens
// counts only the input after the last cache breakpoint: the whole input is
// input_tokens + cache_creation_input_tokens + cache_read_input_tokens; the
// cache writes are cache_creation_input_tokens, of which
// cache_creation.ephemeral_1h_input_tokens for one hour; the cache reads,
// cache_read_input_tokens, are exempt from the input-tokens-per-minute
// limit on the models [itpmCountsCacheReads] does not name.
func usage(model string, input, cacheWrite, cacheWrite1h, cacheRead, output int64) portico.Usage {
	u := portico.Usage{
		InputTokens:        int(input + cacheWrite + cacheRead),
		OutputTokens:       int(output),
		CachedInputTokens:  int(cacheRead),
		CacheWriteTokens:   int(cacheWrite),
		CacheWrite1hTokens: int(min(cacheWrite1h, cacheWrite)),
	}
	if !itpmCountsCacheReads(model) {
		u.LimitExemptTokens = int(cacheRead)
	}
	return u
}

// itpmCountsCacheReads reports whether Anthropic's input-tokens-per-minute
// limit counts cache reads on model: on the Claude 3 models (the ones the
// rate-limit page marks with a dagger, and their older siblings, counted
// to be safe); "for most Claude models, only uncached input tokens count
// towards your ITPM rate limits" (https://docs.claude.com/en/api/rate-limits).
func itpmCountsCacheReads(model string) bool { return strings.HasPrefix(model, "claude-3") }

// noRetries is option.WithMaxRetries(0), made once: each call's options
// end with it (see New), and making it there cost an allocation a call.
var noRetries = option.WithMaxRetries(0)

// watched watches the exchange of the call whose context carries it
// (adapt.WithExchange), made once as noRetries.
var watched = option.WithMiddleware(adapt.CarriedMiddleware)
