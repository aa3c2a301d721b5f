package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
	"github.com/portico-llm/portico/validate"
)

// Config configures a [Model]. The zero Config is usable: requests must then
// name their model.
type Config struct {
	// Model is the model asked for when a Request leaves Model empty
	// ("gpt-4o-mini"). Empty means requests must name one; a request that does
	// not fails with a Permanent error.
	Model string
	// LegacyMaxTokens sends Request.MaxOutputTokens as "max_tokens" instead of
	// "max_completion_tokens", for OpenAI-compatible servers that only know
	// the older field. False (the default) sends max_completion_tokens.
	LegacyMaxTokens bool
	// IncludeProviderMessage puts the provider's error message into
	// [ProviderError].Message and so into error strings. Off by default,
	// because providers may echo prompt text in their messages.
	IncludeProviderMessage bool
	// MaxResponseBytes bounds the bytes of response body read for one call:
	// the JSON body of an answer or of an HTTP error, or the whole event
	// stream of a streamed answer. A server that sends more (a huge body, a
	// stream that never ends, one endless event), or announces more in its
	// Content-Length, gets its connection closed and the call fails with
	// [portico.InvalidResponse] wrapping [ErrTooLarge]. Zero means
	// [DefaultMaxResponseBytes] (64 MiB); a negative value means no limit
	// (the caller's context is then the only bound on an endless stream).
	MaxResponseBytes int64
	// Prefill says how the server is told that a request's last message,
	// when it is the assistant's, is the start of the answer to continue (a
	// prefill, as a continuation of a broken stream sends under
	// portico.ContinuePrefill). The zero value, PrefillAsIs, sends it as it
	// is.
	Prefill Prefill
}

// Prefill is how a request whose last message is the assistant's asks an
// OpenAI-compatible server to continue that message rather than answer it.
// A route whose server continues it declares portico.ContinuePrefill in its
// Capabilities.Continuation; one whose server does not (OpenAI's own API)
// declares portico.ContinueInstruct.
type Prefill uint8

// The prefill dialects.
const (
	// PrefillAsIs sends the message as it is: llama.cpp's server (since
	// 2025, unless started with --no-prefill-assistant), Ollama and LMDeploy
	// continue a trailing assistant message; OpenAI answers it as a finished
	// turn.
	PrefillAsIs Prefill = iota
	// PrefillContinueFinalMessage adds "continue_final_message": true and
	// "add_generation_prompt": false to the body: vLLM, SGLang, Hugging
	// Face TGI, and llama.cpp's server since 2026.
	PrefillContinueFinalMessage
	// PrefillPrefixFlag adds "prefix": true to the last message: DeepSeek
	// (on its beta base URL) and Mistral.
	PrefillPrefixFlag
)

// DefaultMaxResponseBytes is the body limit of a zero [Config.MaxResponseBytes]:
// 64 MiB, about twice the event stream of a 128k-token answer at OpenAI's
// ~250 bytes per streamed token.
const DefaultMaxResponseBytes = 64 << 20

// Model is a [portico.Model] over OpenAI's chat-completions API through the
// official SDK, github.com/openai/openai-go/v3. It is safe for concurrent use.
// The SDK's own retries are off: Model makes exactly one HTTP request per
// Generate (see "One layer owns retries" in the package doc).
type Model struct {
	cfg    Config
	limit  int64 // body bytes per call; 0: none
	client oai.Client
}

// New returns a Model calling the API through an SDK client built from opts,
// the SDK's own options: option.WithBaseURL, option.WithAPIKey,
// option.WithHTTPClient, option.WithRequestTimeout, option.WithHeader, ...
// As with openai.NewClient, the OPENAI_API_KEY and OPENAI_BASE_URL
// environment variables supply defaults that opts override.
//
// New appends option.WithMaxRetries(0) after opts, so the SDK never retries
// whatever opts say; see [Model].
func New(cfg Config, opts ...option.RequestOption) *Model {
	all := append(slices.Clip(opts), option.WithMaxRetries(0)) // a new array: opts stays the caller's
	return &Model{cfg: cfg, limit: adapt.MaxBytes(cfg.MaxResponseBytes, DefaultMaxResponseBytes), client: oai.NewClient(all...)}
}

// Generate sends req as one chat completion, streamed when req.OnChunk is
// set, and returns the answer: text, tool calls, finish reason, usage
// (cached input tokens included), the model that answered and the
// provider's rate-limit headers. Streamed text deltas reach OnChunk as they
// arrive (an empty Chunk for each tool-call delta) and add up to
// Response.Text; tool calls are assembled by index, in index order. Text
// and arguments pass byte for byte, invalid UTF-8 included; an unknown
// finish_reason passes unchanged; a missing usage leaves Usage zero.
//
// Every error is a [*portico.Error], classified by the table in the package
// doc ("Error classes"); HTTP errors wrap a [*ProviderError]. An OnChunk
// error is returned as is when it is a *portico.Error, else as Canceled
// wrapping it. A request that cannot be encoded is Permanent, without any
// HTTP request. Safe for concurrent use.
func (m *Model) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	model, err := adapt.ModelName(req, m.cfg.Model)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, m.classify(ctx, ctx.Err(), &adapt.Exchange{}, model)
	}
	if req.Embedding != nil {
		return m.embed(ctx, req, model)
	}
	if err := media(req); err != nil {
		return nil, err
	}
	params, opts, err := m.params(req, model)
	if err := unsendable(err, req.Schema, model); err != nil {
		return nil, err
	}
	x := &adapt.Exchange{Limit: m.limit, TooLarge: ErrTooLarge, ErrorLines: true}
	ctx = adapt.WithExchange(ctx, x)
	opts = append(opts, watched, noRetries)
	if req.Streaming() {
		return m.stream(ctx, req, params, opts, x, model)
	}
	comp, err := m.client.Chat.Completions.New(ctx, params, opts...)
	if err != nil {
		return nil, m.classify(ctx, err, x, model)
	}
	return m.answer(comp, x, model)
}

// unsendable is the error of a request whose parameters failed to encode
// with err (Permanent), or whose strict schema s is outside OpenAI's subset
// (Incompatible: it is not every provider's, another route may serve it);
// nil for one that may be sent.
func unsendable(err error, s *portico.Schema, model string) error {
	if err != nil {
		return &portico.Error{Class: portico.Permanent, Model: model, Reason: "request not encodable", Err: err}
	}
	if s == nil || !s.Strict {
		return nil
	}
	if ps := validate.StrictCompatible(s.JSON); ps != nil {
		return &portico.Error{Class: portico.Incompatible, Model: model, Reason: "strict schema", NotSent: true, Err: &validate.StrictError{Problems: ps}}
	}
	return nil
}

// answer checks a non-streamed completion and reads the Response from it.
func (m *Model) answer(comp *oai.ChatCompletion, x *adapt.Exchange, model string) (*portico.Response, error) {
	if comp == nil { // the body was JSON null
		return nil, malformed(x, model, "no completion")
	}
	if !x.Whole(comp.RawJSON()) {
		return nil, malformed(x, model, "data after the completion")
	}
	if _, ok := comp.JSON.ExtraFields["error"]; ok || comp.JSON.Object.Raw() == `"error"` {
		if f := parseErrorBody([]byte(comp.RawJSON())); f.Found {
			return nil, m.inBand(f, x, model)
		}
	}
	if why := checkCompletion(comp); why != "" {
		return nil, malformed(x, model, why)
	}
	ch := comp.Choices[0]
	if ch.FinishReason == "error" {
		return nil, m.choiceError(ch.RawJSON(), x, model)
	}
	resp := &portico.Response{
		ID:           comp.ID,
		Text:         ch.Message.Content,
		FinishReason: finishReason(ch.FinishReason),
		Model:        cmp.Or(comp.Model, model),
		Usage:        usage(comp.Usage),
		RateLimit:    ParseRateLimit(x.Header),
		ToolCalls:    toolCalls(ch.Message.ToolCalls),
	}
	if text, key := reasoningText(ch.Message.JSON.ExtraFields); text != "" {
		resp.Thoughts = []portico.Thought{{Dialect: ChatDialect, Kind: key, Text: text}}
	}
	return resp, nil
}

// toolCalls reads a completion's tool calls, nil for none: a function's
// arguments, or a custom tool's input as its arguments.
func toolCalls(tcs []oai.ChatCompletionMessageToolCallUnion) []portico.ToolCall {
	if len(tcs) == 0 {
		return nil
	}
	calls := make([]portico.ToolCall, 0, len(tcs))
	for _, tc := range tcs {
		call := portico.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: []byte(arguments(tc.Function.JSON.Arguments, tc.Function.Arguments))}
		if tc.Type == "custom" {
			call.Name, call.Arguments = tc.Custom.Name, []byte(tc.Custom.Input)
		}
		calls = append(calls, call)
	}
	return calls
}

// choiceError is the error of a choice whose finish_reason is "error"
// (OpenRouter's, when the provider behind it failed mid-answer): what the
// choice's error object says, else Transient, as an error event inside a 200
// answer (raw is the choice's JSON).
func (m *Model) choiceError(raw string, x *adapt.Exchange, model string) error {
	// Only the choice's error field: its other keys are the answer's (a
	// non-streamed choice's "message"), never the provider's error.
	var f errorFields
	var choice struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &choice) == nil && len(choice.Error) > 0 && string(choice.Error) != "null" {
		f = parseErrorBody(append(append([]byte(`{"error":`), choice.Error...), '}'))
	}
	f.Found = true
	return m.inBand(f, x, model)
}

// finishReason maps OpenAI's finish_reason onto portico's: the four known
// values map to themselves, the deprecated "function_call" to tool_calls, and
// any other value passes through.
func finishReason(s string) portico.FinishReason {
	if s == "function_call" {
		return portico.FinishToolCalls
	}
	return portico.FinishReason(s)
}

func usage(u oai.CompletionUsage) portico.Usage {
	return portico.Usage{
		InputTokens:       int(u.PromptTokens),
		OutputTokens:      int(u.CompletionTokens),
		ReasoningTokens:   int(u.CompletionTokensDetails.ReasoningTokens),
		CachedInputTokens: int(u.PromptTokensDetails.CachedTokens),
	}
}

// chunked reports whether c reaches OnChunk, or progress with its
// reasoning: choice 0 has a text, reasoning or tool call delta.
func chunked(c *oai.ChatCompletionChunk) bool {
	for i := range c.Choices {
		if d := &c.Choices[i].Delta; c.Choices[i].Index == 0 && (d.Content != "" || len(d.ToolCalls) > 0 || reasoned(d)) {
			return true
		}
	}
	return false
}

// reasoned reports whether d has a reasoning delta.
func reasoned(d *oai.ChatCompletionChunkChoiceDelta) bool {
	text, _ := reasoningText(d.JSON.ExtraFields)
	return text != ""
}

// errorChunk reports whether a chunk is an error without an "error" key
// (which the SDK turns into an error itself): {"object":"error",...} as
// vLLM before 0.9 and SGLang send, or a bare {"message":...} with no id and
// no choices, as an "event: error" frame may carry.
func errorChunk(c *oai.ChatCompletionChunk) bool {
	if c.JSON.Object.Raw() == `"error"` {
		return true
	}
	if c.ID != "" || len(c.Choices) != 0 {
		return false
	}
	_, msg := c.JSON.ExtraFields["message"]
	_, detail := c.JSON.ExtraFields["detail"]
	return msg || detail
}

// malformed is the error of an answer that is not a valid completion.
func malformed(x *adapt.Exchange, model, why string) error {
	return x.Malformed(model, why, ParseRateLimit(x.Header))
}

// stream runs a streamed completion and assembles the Response.
func (m *Model) stream(ctx context.Context, req *portico.Request, params oai.ChatCompletionNewParams, opts []option.RequestOption, x *adapt.Exchange, model string) (*portico.Response, error) {
	params.StreamOptions.IncludeUsage = oai.Bool(true)
	s := m.client.Chat.Completions.NewStreaming(ctx, params, opts...)
	defer s.Close()
	st := streamState{m: m, req: req, x: x, model: model, resp: &portico.Response{Model: model}}
	for s.Next() {
		if ctx.Err() != nil {
			break // no chunk reaches the caller after it canceled
		}
		c := s.Current()
		if err := st.chunk(ctx, &c); err != nil {
			return nil, err
		}
	}
	return st.end(ctx, s.Err())
}

// streamState is what a streamed completion has said so far; stream owns it.
type streamState struct {
	m      *Model
	req    *portico.Request
	x      *adapt.Exchange
	model  string
	resp   *portico.Response
	text   strings.Builder
	calls  []portico.ToolCall
	args   [][]byte
	seen   []bool // seen[i]: a delta named index i
	finish string
}

// chunk takes in one chunk of the stream: an in-band error, the model, id
// and usage, and the deltas of choice 0.
func (st *streamState) chunk(ctx context.Context, c *oai.ChatCompletionChunk) error {
	m, x, model, resp := st.m, st.x, st.model, st.resp
	if errorChunk(c) {
		if f := parseErrorBody([]byte(c.RawJSON())); f.Found {
			return m.inBand(f, x, model)
		}
	}
	if why := checkChunk(c); why != "" {
		return malformed(x, model, why)
	}
	if !chunked(c) {
		adapt.Alive(ctx) // a role or usage delta: progress all the same
	}
	resp.Model = cmp.Or(c.Model, resp.Model)
	resp.ID = cmp.Or(c.ID, resp.ID)
	if c.JSON.Usage.Valid() {
		resp.Usage = usage(c.Usage)
	}
	for i := range c.Choices {
		if c.Choices[i].Index != 0 {
			continue
		}
		if err := st.choice(ctx, &c.Choices[i]); err != nil {
			return err
		}
	}
	return nil
}

// choice takes in the deltas of choice 0: its finish reason, reasoning,
// text (passed on to OnChunk) and tool calls.
func (st *streamState) choice(ctx context.Context, ch *oai.ChatCompletionChunkChoice) error {
	if ch.FinishReason == "error" { // OpenRouter: the provider failed mid-answer, its error on the choice
		return st.m.choiceError(ch.RawJSON(), st.x, st.model)
	}
	st.finish = cmp.Or(ch.FinishReason, st.finish)
	if text, key := reasoningText(ch.Delta.JSON.ExtraFields); text != "" {
		if err := st.think(ctx, text, key); err != nil {
			return err
		}
	}
	if d := ch.Delta.Content; d != "" {
		st.text.WriteString(d)
		if err := st.deliver(portico.Chunk{Text: d}); err != nil {
			return err
		}
	}
	for j := range ch.Delta.ToolCalls {
		if err := st.toolCall(&ch.Delta.ToolCalls[j]); err != nil {
			return err
		}
	}
	return nil
}

// toolCall takes in one tool call delta.
func (st *streamState) toolCall(tc *oai.ChatCompletionChunkChoiceDeltaToolCall) error {
	idx := st.callIndex(tc)
	if idx < 0 || idx >= 128 {
		return malformed(st.x, st.model, "tool call index out of range")
	}
	for idx >= len(st.calls) {
		st.calls = append(st.calls, portico.ToolCall{})
		st.args = append(st.args, nil)
		st.seen = append(st.seen, false)
	}
	st.seen[idx] = true
	call := &st.calls[idx]
	if tc.ID != "" {
		call.ID = tc.ID
	}
	// A name comes whole in the first delta (OpenAI), split across
	// deltas, or whole again in each (MiniMax through NVIDIA NIM):
	// a part equal to the name so far is a repeat.
	if n := tc.Function.Name; n != "" && n != call.Name {
		call.Name += n
	}
	st.args[idx] = append(st.args[idx], arguments(tc.Function.JSON.Arguments, tc.Function.Arguments)...)
	return st.deliver(portico.Chunk{})
}

// deliver passes c to OnChunk.
func (st *streamState) deliver(c portico.Chunk) error {
	if err := st.req.OnChunk(c); err != nil {
		return adapt.ChunkError(err, st.model)
	}
	return nil
}

// callIndex is the index of the call tc continues. A delta without one
// (Gemini's OpenAI-compatible endpoint) starts the next call when it has
// an id of its own, and continues the current one otherwise.
func (st *streamState) callIndex(tc *oai.ChatCompletionChunkChoiceDeltaToolCall) int {
	if tc.JSON.Index.Valid() {
		return int(tc.Index)
	}
	if n := len(st.calls); n > 0 && (tc.ID == "" || tc.ID == st.calls[n-1].ID) {
		return n - 1
	}
	return len(st.calls)
}

// end checks how the stream ended (streamErr is the stream's own error) and
// assembles the Response.
func (st *streamState) end(ctx context.Context, streamErr error) (*portico.Response, error) {
	m, x, model, resp := st.m, st.x, st.model, st.resp
	if err := cmp.Or(streamErr, ctx.Err()); err != nil {
		return nil, m.classify(ctx, err, x, model)
	}
	if line := x.ErrorLine.Get(); st.finish == "" && line != nil { // llama.cpp's "error:" line
		f := parseErrorBody(line)
		f.Found = true
		return nil, m.inBand(f, x, model)
	}
	if x.ReadErr != nil {
		return nil, m.classify(ctx, x.ReadErr, x, model)
	}
	if st.finish == "" {
		return nil, malformed(x, model, "stream ended without a finish reason")
	}
	resp.Text = st.text.String()
	resp.FinishReason = finishReason(st.finish)
	resp.RateLimit = ParseRateLimit(x.Header)
	if len(st.calls) > 0 {
		// Indexes are dense (0, 1, ...) from OpenAI; a server that skips some
		// gets its calls in index order without empty ones for the gaps.
		out := st.calls[:0]
		for i := range st.calls {
			if st.seen[i] {
				st.calls[i].Arguments = st.args[i]
				out = append(out, st.calls[i])
			}
		}
		resp.ToolCalls = out
	}
	return resp, nil
}

// noRetries is option.WithMaxRetries(0), made once: each call's options
// end with it (see New), and making it there cost an allocation a call.
var noRetries = option.WithMaxRetries(0)

// watched watches the exchange of the call whose context carries it
// (adapt.WithExchange), made once as noRetries.
var watched = option.WithMiddleware(adapt.CarriedMiddleware)
