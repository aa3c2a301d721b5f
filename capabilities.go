package portico

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/rules"
)

// Modality is a set of input kinds, as bits.
type Modality uint8

// The modalities. ModalityText|ModalityImage is a route that reads both.
const (
	ModalityText     Modality = 1 << iota
	ModalityImage             // image parts
	ModalityDocument          // document parts: PDF, plain text (see [Media])
	ModalityAudio             // audio input parts

	allModalities = ModalityText | ModalityImage | ModalityDocument | ModalityAudio
)

// Has reports whether m includes every modality of want.
func (m Modality) Has(want Modality) bool { return m&want == want }

// String returns the names of m's modalities joined by "+" ("text",
// "text+image", "text+document+audio"), or "none".
func (m Modality) String() string {
	if m&^allModalities != 0 {
		return "Modality(" + strconv.Itoa(int(m)) + ")"
	}
	var names []string
	for k, bit := range partModalities {
		if m.Has(bit) {
			names = append(names, PartKind(k).String())
		}
	}
	return cmp.Or(strings.Join(names, "+"), "none")
}

// partModalities is the modality of each kind of part; a modality is
// named after its part.
var partModalities = [...]Modality{PartText: ModalityText, PartImage: ModalityImage, PartDocument: ModalityDocument, PartAudio: ModalityAudio}

// Modalities returns the modalities r's messages use: ModalityText, plus
// ModalityImage, ModalityDocument or ModalityAudio for each kind of part
// present.
func (r *Request) Modalities() Modality {
	m := ModalityText
	for i := range r.Messages {
		for _, p := range r.Messages[i].Content {
			if int(p.Kind) < len(partModalities) {
				m |= partModalities[p.Kind]
			}
		}
	}
	return m
}

// SchemaMode is how far a route supports structured output. Modes are ordered:
// a route with a higher mode can serve any request needing a lower one.
type SchemaMode uint8

// The structured-output modes.
const (
	SchemaNone       SchemaMode = iota // no structured output
	SchemaJSONObject                   // "some JSON object" (OpenAI's json_object)
	SchemaJSON                         // a JSON Schema, followed on a best-effort basis
	SchemaStrict                       // a JSON Schema enforced by constrained decoding (OpenAI strict mode)
)

// String returns "none", "json_object", "json_schema" or "strict".
func (s SchemaMode) String() string { return enum.Name(schemaNames[:], s, "SchemaMode") }

var schemaNames = [...]string{SchemaNone: "none", SchemaJSONObject: "json_object", SchemaJSON: "json_schema", SchemaStrict: "strict"}

// Capabilities describes what a route (one model at one provider) can do and what
// it costs. Routers, cascades and fallbacks filter candidates on it with
// [Capabilities.Fits], the one shared filter. Zero numbers (ContextWindow,
// MaxOutput, prices) mean "unknown" and exclude nothing; the zero Modalities,
// Tools and Schema describe a plain text model (text only, no tool calling, no
// structured output), so a route must declare those capabilities to be given
// requests that need them.
type Capabilities struct {
	// Provider names who serves the route ("openai", "azure", "vllm-eu"); routes
	// with different providers are taken to fail independently.
	Provider string
	// Region where the route is served, for the same purpose.
	Region string
	// Quota names the upstream quota the route draws on (an account, or a
	// key shared by several deployments), by a name of the user's choosing,
	// never the key itself: routes with the same Quota are rate-limited
	// together, so a Retry-After one of them announces cools all of them
	// down (package fallback). Empty means the route's own, named after it.
	Quota string
	// ContextWindow is the most tokens of input plus output the model takes.
	ContextWindow int
	// MaxOutput is the most output tokens the model produces in one answer.
	MaxOutput int
	// Modalities the model reads; zero means ModalityText.
	Modalities Modality
	// Tools is true when the model supports tool (function) calling.
	Tools bool
	// Schema is the structured-output support.
	Schema SchemaMode
	// Embedding, when not empty, is the embedding space the route's model
	// produces ("text-embedding-3-small/1536"): the route serves only
	// embedding requests of that Space ([Embedding]).
	Embedding string
	// Reasoning is true when the model reasons and its adapter maps
	// Request.Reasoning; routing layers send the setting only to such
	// routes, and only they fit a request whose setting is Required.
	Reasoning bool
	// ModelClass is the model class used by Contract.ModelClasses ("frontier",
	// "small", "reasoning", ...).
	ModelClass string
	// InputPrice and OutputPrice are prices per token, in the application's
	// currency unit (say US dollars: 2.5e-6 for $2.50 per million tokens).
	InputPrice, OutputPrice float64
	// CachedInputPrice is the price per cached input token (a cache read);
	// 0 means InputPrice.
	CachedInputPrice float64
	// CacheWritePrice is the price per input token written to the prompt
	// cache at the provider's short TTL (Anthropic's 5 minutes: 1.25 x
	// InputPrice), and CacheWrite1hPrice for one hour (Anthropic: 2 x
	// InputPrice); 0 means InputPrice, and CacheWritePrice for the hour.
	CacheWritePrice, CacheWrite1hPrice float64
	// Continuation says whether and how the route continues an answer that
	// broke off ([Request.Prefix]); the zero value, ContinueNone, takes no
	// continuation, so a route opts in.
	Continuation Continuation
	// MaxRequestBytes is the largest request the route takes, in bytes of
	// [Request.Size] (a provider's limit on the request body, less its
	// JSON framing); zero means no limit of its own.
	MaxRequestBytes int
}

// Cost returns the price of usage u on this route: plain input at
// InputPrice, cache reads at CachedInputPrice, cache writes at
// CacheWritePrice or CacheWrite1hPrice (each 0 falling back as its doc
// says), output (reasoning included) at OutputPrice. Usage's parts are
// clamped to its InputTokens, reads first; negative counts are zero.
func (c *Capabilities) Cost(u Usage) float64 {
	plain, read, write5m, write1h := u.inputParts()
	readPrice := cmp.Or(c.CachedInputPrice, c.InputPrice)
	writePrice := cmp.Or(c.CacheWritePrice, c.InputPrice)
	write1hPrice := cmp.Or(c.CacheWrite1hPrice, writePrice)
	return float64(plain)*c.InputPrice + float64(read)*readPrice +
		float64(write5m)*writePrice + float64(write1h)*write1hPrice +
		float64(max(u.OutputTokens, 0))*c.OutputPrice
}

// Validate reports a field of c that can only be a mistake: a negative
// ContextWindow or MaxOutput, a negative or non-finite price, Modalities,
// Schema or Continuation outside their constants. The error's message starts with
// "portico: Capabilities." and the field's name. Constructors of routing
// layers (package fallback, route, stack) call it for each route.
func (c *Capabilities) Validate() error {
	const at = "portico: Capabilities."
	negative := func(field string, n int) rules.Rule {
		return rules.If(n < 0, at+field+" is negative ("+strconv.Itoa(n)+")")
	}
	price := func(field string, p float64) rules.Rule {
		return rules.If(!(p >= 0 && p <= math.MaxFloat64), at+field+" must be a finite price >= 0 ("+strconv.FormatFloat(p, 'g', -1, 64)+")")
	}
	return rules.First(
		negative("ContextWindow", c.ContextWindow), negative("MaxOutput", c.MaxOutput), negative("MaxRequestBytes", c.MaxRequestBytes),
		rules.If(c.Modalities&^allModalities != 0, at+"Modalities has unknown bits ("+c.Modalities.String()+")"),
		rules.If(c.Schema > SchemaStrict, at+"Schema is not a SchemaMode ("+c.Schema.String()+")"),
		rules.If(c.Continuation > ContinuePrefill, at+"Continuation is not a Continuation ("+c.Continuation.String()+")"),
		price("InputPrice", c.InputPrice), price("OutputPrice", c.OutputPrice), price("CachedInputPrice", c.CachedInputPrice),
		price("CacheWritePrice", c.CacheWritePrice), price("CacheWrite1hPrice", c.CacheWrite1hPrice),
	)
}

// Contract is a workload's machine-readable routing contract: what any
// route serving it must offer. The zero Contract asks for nothing.
type Contract struct {
	// Modalities the workload needs beyond what its messages show; zero adds none.
	Modalities Modality
	// MaxInputTokens the workload may send, in tokens: a route must fit the
	// larger of it and the request's estimated input, plus the request's
	// MaxOutputTokens, in its context window. Zero: the estimate alone.
	MaxInputTokens int
	// ToolsRequired: the route must support tool calling.
	ToolsRequired bool
	// SchemaID names the structured-output schema the workload relies on; with it
	// set the route must support at least SchemaJSON.
	SchemaID string
	// StrictSchema: the route must support SchemaStrict.
	StrictSchema bool
	// ModelClasses, when non-empty, lists the model classes allowed.
	ModelClasses []string
	// MaxCost is the most one request may cost, in the Capabilities' price unit,
	// estimated before the call from input tokens and N_max
	// ([Capabilities.EstimateCost]); 0: no limit. Negative or NaN is refused
	// (see [Contract.Validate]).
	MaxCost float64
	// Deadline is the end-to-end time the workload allows; 0: only the
	// context's. Negative is refused (see [Contract.Validate]).
	Deadline time.Duration
}

// Validate reports a field of k that can only be a mistake: a negative
// MaxInputTokens, Deadline or MaxCost, a NaN MaxCost, or Modalities outside
// their constants. A Contract arrives with each request, so the error is a
// shared [Permanent] *Error (the request is wrong on any route) whose Reason
// names the field, such as "negative Contract.Deadline"; it must not be
// modified. [Capabilities.Fits] calls it first, so every router and fallback
// refuses such a request before choosing a route. Validate does not allocate.
func (k *Contract) Validate() error {
	switch {
	case k.Deadline < 0:
		return errContractDeadline
	case !(k.MaxCost >= 0):
		return errContractMaxCost
	case k.MaxInputTokens < 0:
		return errContractMaxInput
	case k.Modalities&^allModalities != 0:
		return errContractModalities
	}
	return nil
}

// Fits reports whether this route can serve req, whose input is estimated at
// inputTokens tokens, under req's Contract (if any). It returns nil; the
// [Permanent] *Error of a request wrong on any route ([Request.Validate]'s,
// or "negative token count" for a negative inputTokens), checked first; or
// an [Incompatible] [*Error] whose Reason names the first unmet need, in
// this order: "modality" (of the messages and of the contract); "context
// window" (ContextWindow below the larger of inputTokens and
// Contract.MaxInputTokens, plus MaxOutputTokens); "max output" (MaxOutput
// below MaxOutputTokens); "request size" ([Request.Size] above
// MaxRequestBytes); "tools" (asked for, unsupported); "strict schema"
// (asked for, not SchemaStrict) or "schema" (a Schema or SchemaID, less than
// SchemaJSON); "reasoning" (Reasoning.Required, and no
// Capabilities.Reasoning); "model class" (outside Contract.ModelClasses); "cost"
// ([Capabilities.EstimateCost] above Contract.MaxCost); "continuation" (a
// Request.Prefix, and Continuation ContinueNone). Fits never allocates: its
// errors are shared values that callers must not modify.
func (c *Capabilities) Fits(req *Request, inputTokens int) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if inputTokens < 0 {
		return errNegative
	}
	k := cmp.Or(req.Contract, &noContract)
	if !c.modalities().Has(req.Modalities() | k.Modalities) {
		return errModality
	}
	if err := c.fitsSize(req, max(inputTokens, k.MaxInputTokens)); err != nil {
		return err
	}
	return c.fitsNeeds(req, k, inputTokens)
}

// fitsSize checks req, of in input tokens, against the route's size limits.
func (c *Capabilities) fitsSize(req *Request, in int) error {
	switch {
	case c.ContextWindow > 0 && req.MaxOutputTokens > c.ContextWindow-in:
		return errWindow // in + MaxOutputTokens > ContextWindow, without overflowing (Fits checked MaxOutputTokens >= 0)
	case c.MaxOutput > 0 && req.MaxOutputTokens > c.MaxOutput:
		return errMaxOutput
	case c.MaxRequestBytes > 0 && req.Size() > c.MaxRequestBytes:
		return errRequestSize
	}
	return nil
}

// fitsNeeds checks what req and its contract k need of the route beyond size:
// first the features (fitsFeatures), then the model class, the cost and
// the continuation.
func (c *Capabilities) fitsNeeds(req *Request, k *Contract, inputTokens int) error {
	if err := c.fitsFeatures(req, k); err != nil {
		return err
	}
	switch {
	case len(k.ModelClasses) > 0 && !slices.Contains(k.ModelClasses, c.ModelClass):
		return errModelClass
	case k.MaxCost > 0 && c.EstimateCost(req, inputTokens) > k.MaxCost:
		return errCost
	case req.Prefix != "" && c.Continuation == ContinueNone:
		return errContinuation
	}
	return nil
}

// fitsFeatures checks the features req and its contract k use against the
// route's: the embedding space, tools, the schema mode and reasoning.
func (c *Capabilities) fitsFeatures(req *Request, k *Contract) error {
	schema := schemaNeed(req, k)
	switch {
	case req.Embedding != nil && req.Embedding.Space != c.Embedding:
		return errEmbeddingSpace
	case req.Embedding == nil && c.Embedding != "":
		return errEmbeddingRoute
	case (len(req.Tools) > 0 || k.ToolsRequired) && !c.Tools:
		return errTools
	case c.Schema < schema:
		return errSchemaNeed[schema]
	case req.Reasoning != nil && req.Reasoning.Required && !c.Reasoning:
		return errReasoning
	}
	return nil
}

// schemaNeed is the least schema mode req and its contract k need: strict
// when either asks for it, a JSON Schema for a Schema or a SchemaID.
func schemaNeed(req *Request, k *Contract) SchemaMode {
	switch {
	case k.StrictSchema || req.Schema != nil && req.Schema.Strict:
		return SchemaStrict
	case req.Schema != nil || k.SchemaID != "":
		return SchemaJSON
	}
	return SchemaNone
}

// errSchemaNeed is the error of a route whose schema mode is below the one
// a request needs, by that need.
var errSchemaNeed = [...]error{SchemaJSON: errSchema, SchemaStrict: errStrictSchema}

// modalities returns the route's modalities, ModalityText when it names none.
func (c *Capabilities) modalities() Modality { return cmp.Or(c.Modalities, ModalityText) }

// Covers reports whether c fits every request that o fits, at the same
// input size and under a contract without MaxCost (the one check that reads
// prices): c takes every modality o takes, has no lower context window,
// output limit and request size limit (0 is none), tools, reasoning and
// continuations where o has them, a
// schema mode no lower, o's model class and o's embedding space. A caller that saw [Fits] pass
// on o may then skip it on c.
func (c *Capabilities) Covers(o *Capabilities) bool {
	return c.modalities().Has(o.modalities()) && c.coversLimits(o) && c.coversFeatures(o)
}

// coversFeatures reports whether c has tools, reasoning and continuations
// where o has them, a schema mode no lower, and o's model class and
// embedding space.
func (c *Capabilities) coversFeatures(o *Capabilities) bool {
	return (c.Tools || !o.Tools) && (c.Reasoning || !o.Reasoning) && c.Schema >= o.Schema && c.ModelClass == o.ModelClass &&
		c.Embedding == o.Embedding && // a space serves only its own requests
		(c.Continuation != ContinueNone || o.Continuation == ContinueNone)
}

// coversLimits reports whether none of c's context window, output limit
// and request size limit is lower than o's (0 is none).
func (c *Capabilities) coversLimits(o *Capabilities) bool {
	return atLeast(c.ContextWindow, o.ContextWindow) && atLeast(c.MaxOutput, o.MaxOutput) &&
		atLeast(c.MaxRequestBytes, o.MaxRequestBytes)
}

// atLeast reports whether limit is none (0) or no lower than other, a limit
// that is set.
func atLeast(limit, other int) bool { return limit == 0 || other > 0 && limit >= other }

// EstimateCost returns the most req may cost on this route before it is sent, in
// the price unit of InputPrice: the input (the larger of inputTokens and the
// contract's MaxInputTokens) at InputPrice plus N_max output tokens at
// OutputPrice, N_max being [Request.OutputBound] of [DefaultMaxTokens]
// (MaxOutputTokens when set), at most MaxOutput when the route has one.
// Cached input is not assumed. It is the one estimate of a call's cost:
// [Capabilities.Fits] compares it with Contract.MaxCost, routers rank by
// it and spend budgets reserve it. A negative inputTokens is taken as zero.
func (c *Capabilities) EstimateCost(req *Request, inputTokens int) float64 {
	in := max(inputTokens, 0)
	if req.Contract != nil {
		in = max(in, req.Contract.MaxInputTokens)
	}
	out := max(req.OutputBound(DefaultMaxTokens), 0)
	if c.MaxOutput > 0 && req.MaxOutputTokens <= 0 {
		out = min(out, c.MaxOutput) // the route answers no more than that
	}
	return float64(in)*c.InputPrice + float64(out)*c.OutputPrice
}

var noContract Contract

// The errors Fits returns, one per unmet need, allocated once: skipping a route
// costs nothing. They are shared, so callers must not modify them. Each is
// NotSent: whoever returns one sent nothing.
var (
	errModality     error = &Error{Class: Incompatible, Reason: "modality", NotSent: true}
	errWindow       error = &Error{Class: Incompatible, Reason: "context window", NotSent: true}
	errMaxOutput    error = &Error{Class: Incompatible, Reason: "max output", NotSent: true}
	errTools        error = &Error{Class: Incompatible, Reason: "tools", NotSent: true}
	errStrictSchema error = &Error{Class: Incompatible, Reason: "strict schema", NotSent: true}
	errSchema       error = &Error{Class: Incompatible, Reason: "schema", NotSent: true}
	errModelClass   error = &Error{Class: Incompatible, Reason: "model class", NotSent: true}
	errCost         error = &Error{Class: Incompatible, Reason: "cost", NotSent: true}
	errContinuation error = &Error{Class: Incompatible, Reason: "continuation", NotSent: true}
	errRequestSize  error = &Error{Class: Incompatible, Reason: "request size", NotSent: true}
	errNegative     error = &Error{Class: Permanent, Reason: "negative token count", NotSent: true}
	errNoMessages   error = &Error{Class: Permanent, Reason: "no messages", NotSent: true}

	errContractDeadline   error = &Error{Class: Permanent, Reason: "negative Contract.Deadline", NotSent: true}
	errContractMaxCost    error = &Error{Class: Permanent, Reason: "negative or NaN Contract.MaxCost", NotSent: true}
	errContractMaxInput   error = &Error{Class: Permanent, Reason: "negative Contract.MaxInputTokens", NotSent: true}
	errContractModalities error = &Error{Class: Permanent, Reason: "unknown Contract.Modalities", NotSent: true}
)
