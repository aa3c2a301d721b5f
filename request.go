package portico

import (
	"encoding/json"

	"github.com/portico-llm/portico/internal/enum"
)

// Role is the author of a [Message], as in the chat-completions APIs.
type Role string

// The roles a [Message] may have.
const (
	RoleSystem    Role = "system"    // instructions from the application
	RoleUser      Role = "user"      // the end user's turn
	RoleAssistant Role = "assistant" // an earlier answer of the model, possibly with tool calls
	RoleTool      Role = "tool"      // the result of a tool call, tied to it by ToolCallID
)

// PartKind says what a [Part] of a message holds.
type PartKind uint8

// The kinds of message content.
const (
	PartText     PartKind = iota // Part.Text holds text
	PartImage                    // Part.ImageURL holds an https: or data: URL of an image
	PartDocument                 // Part.Media holds a document: PDF or plain text (see [Media])
	PartAudio                    // Part.Media holds audio input (see [Media])
)

// String returns "text", "image", "document" or "audio".
func (k PartKind) String() string { return enum.Name(partNames[:], k, "PartKind") }

var partNames = [...]string{PartText: "text", PartImage: "image", PartDocument: "document", PartAudio: "audio"}

// Part is one piece of a message's content: text, an image, a document or
// audio.
type Part struct {
	Kind     PartKind
	Text     string // when Kind is PartText
	ImageURL string // when Kind is PartImage: an https: URL or a data: URL
	Media    *Media // when Kind is PartDocument or PartAudio
	// Cache marks a prompt-cache breakpoint after this part; see [CacheTTL].
	Cache CacheTTL
}

// Message is one turn of a conversation.
type Message struct {
	Role    Role
	Content []Part
	// ToolCalls are the calls an assistant message asked for (RoleAssistant only).
	ToolCalls []ToolCall
	// ToolCallID ties a RoleTool message to the ToolCall.ID it answers.
	ToolCallID string
	// Thoughts are the reasoning blocks of an earlier answer (RoleAssistant
	// only), passed back as [Response].Thoughts gave them; each adapter
	// sends only its own dialect's (see [Thought]).
	Thoughts []Thought
	// Cache marks a prompt-cache breakpoint at the end of this message;
	// see [CacheTTL].
	Cache CacheTTL
}

// Text returns a Message of one text part.
func Text(role Role, text string) Message {
	return Message{Role: role, Content: []Part{{Kind: PartText, Text: text}}}
}

// Tool declares a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema (an object schema) of the call's arguments.
	Parameters json.RawMessage
}

// Schema asks for structured output: the answer's text must be one JSON value
// valid against Schema.
type Schema struct {
	// Name identifies the schema (OpenAI's json_schema.name; Contract.SchemaID).
	Name string
	// JSON is the JSON Schema document, of the draft its "$schema" names;
	// without one, draft 2020-12 (package validate says how it reads
	// schemas written for earlier drafts).
	JSON json.RawMessage
	// Strict asks the provider for its strict structured-output mode, where the
	// provider constrains decoding to the schema (OpenAI's strict: true). Only
	// routes declaring SchemaStrict fit it; an adapter refuses a schema
	// outside its provider's strict subset before sending, as Incompatible
	// (package provider/openai: validate.StrictCompatible).
	Strict bool
}

// Identity says on whose behalf a request is made. Every field is optional; the
// layers that key on one document what they do when it is empty.
type Identity struct {
	// ClientKey isolates callers from one another: rate limits and retry budgets
	// are kept per client key, so one client in an error loop empties only its own.
	// It is not a secret: a shared store may keep it readable in its keys, so
	// derive it from a credential by a hash, never use the credential.
	ClientKey string
	// SessionID ties the calls of one agent program (one conversation, one task)
	// together, for fair queueing and replica affinity (Autellix's and
	// Continuum's program id).
	SessionID string
	// OperationID names the user-level operation at the application boundary; tool
	// side effects are deduplicated on it (package effect's execution key).
	OperationID string
}

// Chunk is a piece of a streamed answer, delivered through [Request.OnChunk].
type Chunk struct {
	// Text is the next fragment of the answer's text; it may be empty for chunks
	// that only carry progress of tool calls.
	Text string
	// Reasoning is the next fragment of the model's reasoning (or its
	// summary), delivered only when the request's Reasoning.Stream asks for
	// it; Text is then empty.
	Reasoning string
}

// Request is one call to a language model.
//
// A Request is read-only to every [Model]: layers that need a different one copy it
// with [Request.Clone]. Slices and maps reachable from a Request are shared between
// the copies and must not be modified in place by anyone once the Request has
// been passed to Generate.
type Request struct {
	// Model names the model asked for. Routing layers may answer with another one;
	// Response.Model says which answered. Empty lets the base Model choose.
	Model string
	// Messages is the conversation, oldest first.
	Messages []Message
	// Tools the model may call; empty for none.
	Tools []Tool
	// Schema, when non-nil, asks for structured output valid against it.
	Schema *Schema
	// MaxOutputTokens is N_max, the most output tokens the answer may have, in
	// tokens. Zero means the route's default; a rate limiter then reserves its
	// Config.DefaultMaxTokens, and refuses the call (Permanent) when it has none
	// (see package ratelimit). Negative is a malformed request (Permanent).
	MaxOutputTokens int
	// Embedding, when non-nil, makes this an embedding request: each message
	// is one input, and the answer is Response.Embeddings (see [Embedding]).
	Embedding *Embedding
	// Reasoning, when non-nil, is the reasoning setting: effort or token
	// budget, whether a route must reason, whether the caller sees the
	// reasoning stream (see [Reasoning]).
	Reasoning *Reasoning
	// Extra carries provider-specific sampling options (temperature, top_p, seed,
	// ...) through unchanged; adapters pass on the keys they know.
	Extra map[string]any
	// Identity says on whose behalf the call is made.
	Identity Identity
	// Priority is the call's criticality under overload: the layers that
	// shed or queue calls (package ratelimit's in-flight cap and queue,
	// and so package adaptive's limit; package throttle; package
	// inflight) shed or delay the lowest first (see [Priority]). The zero
	// value is Default.
	Priority Priority
	// Contract, when non-nil, is the workload's routing contract:
	// routers and fallbacks only pick routes whose Capabilities fit it.
	Contract *Contract
	// NoAmbiguousRetry forbids repeating an attempt whose outcome is unknown
	// ([Ambiguous]: sent, then a timeout or a broken connection): the retry
	// layer returns such an error at once and a fallback group stops at it. By
	// default both try again while no chunk has reached the caller, as the
	// provider SDKs retry timeouts: generation has no side effect besides its
	// cost (tool side effects are guarded by package effect), but the cut
	// attempt may have run, so an ambiguous call may be billed twice. Set it
	// when a duplicate costs more than the failure. A fallback group whose own
	// share of the deadline ran out still moves on (see package fallback).
	NoAmbiguousRetry bool
	// ContinueOnBreak asks that a stream that breaks after chunks reached
	// the caller (a cut connection, an error event, a stall or a trickle
	// that a retry layer's timeouts end) be continued rather than failed: a
	// fallback group sends the delivered text to the same route or the next
	// one that can continue ([Capabilities.Continuation]), delivers only the
	// new text, and answers with the whole. The continuation is billed the
	// prefix again as input and may show a seam of style; see package
	// fallback. Off by default. It applies to streamed requests only.
	ContinueOnBreak bool
	// Overrides, when non-nil, are this request's own retry settings on the
	// route that serves it, within the bounds the route allows; see
	// [Overrides]. Nil keeps every route's own.
	Overrides *Overrides
	// Hedge marks a hedge: the copy of a request that a hedging layer
	// (package hedge, a fallback group's Config.Hedge) sends while an
	// earlier attempt of it still runs. A hedge is not a new request: it
	// was charged a token of its destination's retry budget when sent, so
	// a retry layer deposits nothing for it, and hedges and retries
	// together keep the budget's bound (see retry.Budget), and no hedging
	// layer hedges it again. Callers leave it false; set on a new request,
	// it makes the retry budget stricter and turns hedging off.
	Hedge bool
	// Prefix, when non-empty, is the start of the answer that the caller
	// already has: the request asks for the rest. Routing layers express it
	// in the messages they send ([Route.RequestFor]), the answer's Text is
	// the rest only, and layers that judge the whole answer (package
	// validate) judge Prefix joined to it by a [Seam]. Package fallback sets
	// it on the requests that continue a broken stream; only routes whose
	// Capabilities.Continuation is set fit such a request.
	Prefix string
	// OnChunk, when non-nil, asks for streaming: the answer's text is delivered in
	// order as it arrives. A non-nil error from OnChunk aborts the call, and
	// Generate returns an error wrapping it. OnChunk is called from one goroutine
	// at a time.
	OnChunk func(Chunk) error
}

// Clone returns a shallow copy of r: a new Request whose fields may be reassigned
// without touching r. Slices, maps and pointed-to values are shared and must not
// be modified in place. Clone of nil is nil.
func (r *Request) Clone() *Request {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// Streaming reports whether the caller asked for streaming (OnChunk is set).
func (r *Request) Streaming() bool { return r.OnChunk != nil }

// Validate reports what makes r wrong on any route, so that no route is
// called: no Messages ("no messages"), a Contract that [Contract.Validate]
// refuses (its error), a negative MaxOutputTokens ("negative token
// count"), or a Reasoning setting with an unknown Effort, a negative
// Budget, or a budget not below MaxOutputTokens, or a document or audio
// part whose [Media] is malformed ("malformed media part"). Its errors are shared [Permanent] *Errors, NotSent, that must
// not be modified; it does not allocate. [Capabilities.Fits] calls it first, and
// package stack's deadline layer for every request.
func (r *Request) Validate() error {
	if len(r.Messages) == 0 {
		return errNoMessages
	}
	if k := r.Contract; k != nil {
		if err := k.Validate(); err != nil {
			return err
		}
	}
	if r.MaxOutputTokens < 0 {
		return errNegative
	}
	if r.Reasoning != nil {
		if err := r.Reasoning.validate(r.MaxOutputTokens); err != nil {
			return err
		}
	}
	if r.Embedding != nil {
		if err := r.validateEmbedding(); err != nil {
			return err
		}
	}
	return validateMedia(r.Messages)
}

// size returns the bytes of what m carries to a provider (see
// [Request.Size]).
func (m *Message) size() int {
	n := len(m.Role) + len(m.ToolCallID)
	for _, p := range m.Content {
		n += len(p.Text) + len(p.ImageURL) + p.Media.size()
	}
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	for _, t := range m.Thoughts {
		n += len(t.Text) + len(t.Signature)
	}
	return n
}

// Size returns the bytes of what r carries to a provider: the text and
// image URLs of its messages (a data: URL is the image's base64), their
// media (data, URL, file id and name: see [Media]), their tool
// calls and ids, their Thoughts' text and signatures, the tools' names, descriptions and parameters, the
// schema, the Prefix and the Model's name. The body a provider receives adds
// its JSON framing; Extra is not counted. It is what a size cap compares
// ([Capabilities].MaxRequestBytes, package stack's Config.MaxRequestBytes).
// It does not allocate.
func (r *Request) Size() int {
	n := len(r.Model) + len(r.Prefix)
	for i := range r.Messages {
		n += r.Messages[i].size()
	}
	for _, t := range r.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if r.Schema != nil {
		n += len(r.Schema.Name) + len(r.Schema.JSON)
	}
	return n
}
