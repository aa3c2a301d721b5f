package gemini

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
	"google.golang.org/genai"
)

// Config configures a [Model]. The zero Config is usable: requests must then
// name their model.
type Config struct {
	// Model is the model asked for when a Request leaves Model empty
	// ("gemini-2.5-flash"). Empty means requests must name one; a request
	// that does not fails with a Permanent error.
	Model string
	// IncludeProviderMessage puts Google's error message into
	// [ProviderError].Message and so into error strings. Off by default,
	// because messages may quote the request (OWASP Logging Cheat Sheet:
	// keep personal data out of logs).
	IncludeProviderMessage bool
	// MaxResponseBytes bounds the bytes of response body read for one call:
	// the JSON body of an answer or of an HTTP error, or the whole event
	// stream of a streamed answer. A server that sends more gets its
	// connection closed and the call fails with [portico.InvalidResponse]
	// wrapping [ErrTooLarge]. Zero means [DefaultMaxResponseBytes] (64 MiB);
	// negative means no limit (the caller's context is then the only bound
	// on an endless stream; the SDK itself allows one event of 256 MiB).
	MaxResponseBytes int64
}

// DefaultMaxResponseBytes is the body limit of a zero [Config.MaxResponseBytes]:
// 64 MiB, far beyond the event stream of the longest answer (65,536 output
// tokens at a few hundred bytes per streamed chunk).
const DefaultMaxResponseBytes = 64 << 20

// Model is a [portico.Model] over the Gemini API's generateContent and
// streamGenerateContent through Google's Go SDK, google.golang.org/genai.
// It is safe for concurrent use.
//
// Model makes exactly one HTTP request per Generate: the SDK's HTTP retries
// and its automatic continuation of answers that stop with a continuation
// token are off, so that one layer (package retry) owns retries and counts
// them against its budget (Google SRE book, "Addressing Cascading
// Failures": retry at one layer only).
type Model struct {
	cfg    Config
	limit  int64 // body bytes per call; 0: none
	client *genai.Client
}

// New returns a Model calling the API through an SDK client built from cc,
// the SDK's own configuration (APIKey, Backend, Project, Location,
// Credentials, HTTPClient, HTTPOptions). A zero Backend means the Gemini
// Developer API (genai.BackendGeminiAPI), whatever GOOGLE_GENAI_USE_VERTEXAI
// says; set genai.BackendVertexAI with Project and Location (or an API key,
// Vertex AI's express mode) for Vertex AI. As with genai.NewClient, an empty
// APIKey is read from GOOGLE_API_KEY or GEMINI_API_KEY. ctx is used only to
// build the client (Vertex AI credentials may look up their project).
//
// New turns the SDK's retries off (cc.HTTPOptions.RetryOptions is
// dropped), copies cc.HTTPClient rather than change the caller's, and
// installs its own transport under it (see doc.go, "Bounds"). It fails when
// genai.NewClient does (no API key, a project given to the Gemini API); the
// error says why without the key.
func New(ctx context.Context, cfg Config, cc genai.ClientConfig) (*Model, error) {
	if cc.Backend == genai.BackendUnspecified {
		cc.Backend = genai.BackendGeminiAPI
	}
	cc.HTTPOptions.RetryOptions = nil // nil: one attempt (genai's retryHTTPRequest)
	if cc.HTTPClient != nil {
		c := *cc.HTTPClient
		cc.HTTPClient = &c
	}
	client, err := genai.NewClient(ctx, &cc)
	if err != nil {
		// genai's messages print the whole ClientConfig, API key included.
		msg, _, _ := strings.Cut(err.Error(), " ClientConfig:")
		if cc.APIKey != "" {
			msg = strings.ReplaceAll(msg, cc.APIKey, "[key]")
		}
		return nil, errors.New("gemini: genai.NewClient: " + msg)
	}
	// genai.NewClient set cc.HTTPClient to the client it uses (its own, or
	// our copy of the caller's): bound and watch what it reads.
	hc := cc.HTTPClient
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &transport{base: base}
	return &Model{cfg: cfg, limit: adapt.MaxBytes(cfg.MaxResponseBytes, DefaultMaxResponseBytes), client: client}, nil
}

// Generate sends req as one generateContent call, or streamGenerateContent
// when req.OnChunk is set, and returns the first candidate's answer: text
// (thought parts left out), function calls, finish reason, usage and the
// model version that answered. Streamed text parts reach OnChunk as they
// arrive (an empty Chunk for each function call) and add up to
// Response.Text; the package doc says how parts, usage and finish reasons
// map ("Answers").
//
// Every error is a [*portico.Error], classified by the tables in the package
// doc ("Answers" for finish reasons and blocked prompts, "Error classes");
// HTTP and stream errors wrap a [*ProviderError]. An OnChunk error is
// returned as is when it is a *portico.Error, else as Canceled wrapping it.
// A request that cannot be encoded is Permanent, without any HTTP request.
// Safe for concurrent use.
func (m *Model) Generate(ctx context.Context, req *portico.Request) (resp *portico.Response, err error) {
	model, err := adapt.ModelName(req, m.cfg.Model)
	if err != nil {
		return nil, err
	}
	x := &adapt.Exchange{Limit: m.limit, TooLarge: ErrTooLarge}
	if ctx.Err() != nil {
		return nil, m.classify(ctx, ctx.Err(), x, model)
	}
	if req.Embedding != nil {
		return m.embed(ctx, req, model, x)
	}
	if strings.ContainsAny(model, "?&") || strings.Contains(model, "..") { // genai's tModel refuses them
		e := &portico.Error{Class: portico.Permanent, Model: model, Reason: "request not encodable", NotSent: true,
			Err: errors.New("gemini: model name with '?', '&' or '..'")}
		if req.Model == "" { // Config.Model: the route's own, not the request's
			e.Class, e.Reason = portico.Unusable, "model name not valid"
		}
		return nil, e
	}
	contents, cfg, err := m.params(req)
	if err != nil {
		return nil, &portico.Error{Class: portico.Permanent, Model: model, Reason: "request not encodable", Err: err}
	}
	g := &gen{m: m, req: req, x: x, model: model}
	defer g.recoverSDK(&resp, &err)
	if req.Streaming() {
		return g.stream(ctx, contents, cfg)
	}
	r, err := m.client.Models.GenerateContent(adapt.WithExchange(ctx, x), model, contents, cfg)
	if err != nil {
		return nil, m.classify(ctx, err, x, model)
	}
	return g.whole(r)
}

// gen is one Generate call in progress.
type gen struct {
	m          *Model
	req        *portico.Request
	x          *adapt.Exchange
	model      string
	inCallback bool // OnChunk is running: a panic is the caller's
}

// recoverSDK turns a panic of the SDK while it decoded a response (its
// stream decoder dereferences a null candidate) into an InvalidResponse
// error. A panic of the caller's OnChunk, or one before any response came,
// passes through.
func (g *gen) recoverSDK(resp **portico.Response, err *error) {
	if g.inCallback || g.x.Status == 0 {
		return
	}
	if r := recover(); r != nil {
		*resp = nil
		*err = &portico.Error{Class: portico.InvalidResponse, Model: g.model, Status: g.x.Status, Reason: "SDK failed to decode the response", Err: ErrMalformed}
	}
}

// chunk delivers c to OnChunk.
func (g *gen) chunk(c portico.Chunk) error {
	g.inCallback = true
	err := g.req.OnChunk(c)
	g.inCallback = false
	if err == nil {
		return nil
	}
	return adapt.ChunkError(err, g.model)
}

func (g *gen) malformed(reason string) error {
	return g.x.Malformed(g.model, reason, nil)
}

// whole maps a non-streamed answer.
func (g *gen) whole(r *genai.GenerateContentResponse) (*portico.Response, error) {
	resp := &portico.Response{ID: r.ResponseID, Model: r.ModelVersion, Usage: usage(r.UsageMetadata)}
	resp.Model = cmp.Or(resp.Model, g.model)
	cand := first(r.Candidates)
	if cand == nil {
		return nil, g.noCandidate(r.PromptFeedback, r.UsageMetadata)
	}
	var text strings.Builder
	var th thoughtsOf
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if p == nil {
				continue
			}
			id := ""
			if p.FunctionCall != nil {
				resp.ToolCalls = append(resp.ToolCalls, toolCall(len(resp.ToolCalls), p))
				id = resp.ToolCalls[len(resp.ToolCalls)-1].ID
			} else if !p.Thought {
				text.WriteString(p.Text)
			}
			th.part(p, id)
		}
	}
	resp.Text = text.String()
	resp.Thoughts = th.list
	return g.finish(resp, cand.FinishReason)
}

// finish sets resp's finish reason from Gemini's, or fails for the reasons
// that mean the answer is unusable.
func (g *gen) finish(resp *portico.Response, fr genai.FinishReason) (*portico.Response, error) {
	switch fr {
	case "", genai.FinishReasonUnspecified:
		return nil, g.malformed("no finish reason")
	case genai.FinishReasonMalformedFunctionCall, genai.FinishReasonUnexpectedToolCall, genai.FinishReasonTooManyToolCalls:
		u := resp.Usage
		return nil, &portico.Error{Class: portico.InvalidResponse, Model: g.model, Status: g.x.Status, Code: string(fr), Reason: "invalid function call", Usage: &u}
	}
	resp.FinishReason = finishReason(fr)
	if resp.FinishReason == portico.FinishStop && len(resp.ToolCalls) > 0 {
		resp.FinishReason = portico.FinishToolCalls
	}
	return resp, nil
}

// noCandidate is the error for an answer without a candidate: a blocked
// prompt when promptFeedback says so, else a malformed answer.
func (g *gen) noCandidate(pf *genai.GenerateContentResponsePromptFeedback, um *genai.GenerateContentResponseUsageMetadata) error {
	if pf == nil || pf.BlockReason == "" {
		return g.malformed("no candidates")
	}
	// The same prompt is blocked again on this route; another provider's
	// filters may pass it: Incompatible, not Permanent, and no route fault.
	e := &portico.Error{Class: portico.Incompatible, Model: g.model, Status: g.x.Status, Code: ident(string(pf.BlockReason)), Reason: "prompt blocked"}
	if um != nil {
		u := usage(um)
		e.Usage = &u
	}
	return e
}

// stream runs a streamed call and assembles the Response. A failure after
// a chunk reported usage carries the last running total (what was billed
// so far), so that limiters and the group's cost see it.
func (g *gen) stream(ctx context.Context, contents []*genai.Content, cfg *genai.GenerateContentConfig) (_ *portico.Response, err error) {
	st := streamState{g: g, resp: &portico.Response{Model: g.model}}
	defer func() {
		if err != nil && st.um != nil {
			adapt.Billed(err, usage(st.um))
		}
	}()
	var sdkErr error
	for r, err := range g.m.client.Models.GenerateContentStream(adapt.WithExchange(ctx, g.x), g.model, contents, cfg) {
		if err != nil {
			sdkErr = err
			break
		}
		if ctx.Err() != nil {
			break // no chunk reaches the caller after it canceled
		}
		if err := st.next(ctx, r); err != nil {
			return nil, err
		}
	}
	if err := cmp.Or(sdkErr, ctx.Err(), g.x.ReadErr); err != nil {
		return nil, g.m.classify(ctx, err, g.x, g.model)
	}
	st.resp.Usage = usage(st.um)
	if !st.got {
		return nil, g.noCandidate(st.pf, st.um)
	}
	st.resp.Text = st.text.String()
	st.resp.Thoughts = st.th.list
	return g.finish(st.resp, st.fr)
}

// streamState is what a streamed answer has said so far; stream owns it.
type streamState struct {
	g    *gen
	resp *portico.Response
	text strings.Builder
	fr   genai.FinishReason
	pf   *genai.GenerateContentResponsePromptFeedback
	um   *genai.GenerateContentResponseUsageMetadata // a running total: the last one counts
	got  bool                                        // a candidate arrived
	th   thoughtsOf
}

// next takes in one response of the stream, passing its first candidate's
// text and function calls on.
func (st *streamState) next(ctx context.Context, r *genai.GenerateContentResponse) error {
	if r == nil {
		return nil
	}
	if !chunked(r) {
		adapt.Alive(ctx) // usage alone: progress all the same
	}
	st.resp.Model = cmp.Or(r.ModelVersion, st.resp.Model)
	st.resp.ID = cmp.Or(r.ResponseID, st.resp.ID)
	st.um = cmp.Or(r.UsageMetadata, st.um)
	st.pf = cmp.Or(r.PromptFeedback, st.pf)
	cand := first(r.Candidates)
	if cand == nil {
		return nil
	}
	st.got = true
	st.fr = cmp.Or(cand.FinishReason, st.fr)
	if cand.Content == nil {
		return nil
	}
	for _, p := range cand.Content.Parts {
		if err := st.part(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// part takes in one part of a candidate: a function call, text, or a
// thought (to OnChunk only when the caller asked for the reasoning).
func (st *streamState) part(ctx context.Context, p *genai.Part) error {
	if p == nil {
		return nil
	}
	id := ""
	if p.FunctionCall != nil {
		st.resp.ToolCalls = append(st.resp.ToolCalls, toolCall(len(st.resp.ToolCalls), p))
		id = st.resp.ToolCalls[len(st.resp.ToolCalls)-1].ID
	}
	st.th.part(p, id)
	switch {
	case p.FunctionCall != nil:
		return st.g.chunk(portico.Chunk{})
	case p.Thought:
		return st.g.reasoning(ctx, p.Text)
	case p.Text != "":
		st.text.WriteString(p.Text)
		return st.g.chunk(portico.Chunk{Text: p.Text})
	}
	return nil
}

// first returns the candidate of index 0, or nil.
// chunked reports whether r reaches OnChunk, or progress with its
// reasoning: its first candidate has a function call, a text part, or a
// thought with text.
func chunked(r *genai.GenerateContentResponse) bool {
	cand := first(r.Candidates)
	if cand == nil || cand.Content == nil {
		return false
	}
	for _, p := range cand.Content.Parts {
		if p != nil && (p.FunctionCall != nil || p.Text != "") {
			return true
		}
	}
	return false
}

func first(cs []*genai.Candidate) *genai.Candidate {
	for _, c := range cs {
		if c != nil && c.Index == 0 {
			return c
		}
	}
	return nil
}

// toolCall maps the i-th function call part of an answer.
func toolCall(i int, p *genai.Part) portico.ToolCall {
	fc := p.FunctionCall
	args := []byte("{}")
	if len(fc.Args) > 0 {
		args, _ = json.Marshal(fc.Args) // decoded from JSON: encodes again
	}
	return portico.ToolCall{ID: encodeCallID(i, fc.ID), Name: fc.Name, Arguments: args}
}

// finishReason maps Gemini's finish reason onto portico's: STOP is stop;
// MAX_TOKENS and CONTINUATION (the per-request limit cut an answer the SDK
// would have continued) are length; every filter (SAFETY, RECITATION,
// BLOCKLIST, PROHIBITED_CONTENT, SPII and their IMAGE_ kin) is
// content_filter; others (LANGUAGE, OTHER, NO_IMAGE) pass through unchanged.
func finishReason(fr genai.FinishReason) portico.FinishReason {
	switch fr {
	case genai.FinishReasonStop:
		return portico.FinishStop
	case genai.FinishReasonMaxTokens, genai.FinishReasonContinuation:
		return portico.FinishLength
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return portico.FinishContentFilter
	}
	return portico.FinishReason(fr)
}

// usage maps Gemini's usage metadata: the prompt and the results of
// server-side tools are input; candidates and thoughts are output; cached
// content is the cached part of the input.
func usage(u *genai.GenerateContentResponseUsageMetadata) portico.Usage {
	if u == nil {
		return portico.Usage{}
	}
	return portico.Usage{
		InputTokens:       int(u.PromptTokenCount) + int(u.ToolUsePromptTokenCount),
		OutputTokens:      int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount),
		ReasoningTokens:   int(u.ThoughtsTokenCount),
		CachedInputTokens: int(u.CachedContentTokenCount),
	}
}
