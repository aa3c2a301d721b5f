package validate

import (
	"cmp"
	"errors"
	"slices"
	"strconv"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/enum"
	"github.com/portico-llm/portico/internal/rules"
)

// LengthPolicy says when an answer cut by the token limit (finish reason
// length) is rejected.
type LengthPolicy uint8

// The length policies.
const (
	// LengthRejectStructured rejects truncation when the full output is needed:
	// the request has a Schema or tools, or the response has tool calls. Plain
	// text may be accepted truncated. The default.
	LengthRejectStructured LengthPolicy = iota
	// LengthReject rejects every truncated answer.
	LengthReject
	// LengthAccept never rejects for truncation; the schema stage still
	// rejects truncated JSON.
	LengthAccept
)

// String returns "reject_structured", "reject" or "accept".
func (p LengthPolicy) String() string { return enum.Name(lengthNames[:], p, "LengthPolicy") }

var lengthNames = [...]string{LengthRejectStructured: "reject_structured", LengthReject: "reject", LengthAccept: "accept"}

// Defaults of [Limits] and [Config.CacheSize], and the fixed cap on the
// violations one [Rejection] lists.
const (
	DefaultMaxBytes    = 1 << 20 // 1 MiB of JSON text
	DefaultMaxDepth    = 64      // nested arrays and objects
	DefaultMaxNumber   = 64      // characters of one number literal
	DefaultMaxExponent = 400     // |exponent| of a number, past float64's 308
	DefaultCacheSize   = 128     // compiled schemas
	MaxViolations      = 100     // violations listed per rejection; the rest are counted
)

// Limits bound the work one JSON text (the answer's text, each tool call's
// arguments) may cause. They are checked in one pass before decoding, so a
// hostile answer costs O(its length); an answer past one is rejected with
// [RuleMaxBytes], [RuleMaxDepth] or [RuleMaxNumber]. Zero fields mean the
// defaults; negative ones are an error.
type Limits struct {
	// MaxBytes bounds the text decoded, in bytes. Zero means DefaultMaxBytes
	// (1 MiB).
	MaxBytes int
	// MaxDepth bounds the nesting of arrays and objects. Zero means
	// DefaultMaxDepth (64).
	MaxDepth int
	// MaxNumberLength bounds the length of one number literal, in
	// characters. Zero means DefaultMaxNumber (64).
	MaxNumberLength int
	// MaxExponent bounds the magnitude of a number's decimal exponent. Zero
	// means DefaultMaxExponent (400).
	MaxExponent int
}

// Config configures a [Validator]. The zero Config is the strict default:
// truncation rejected where structure is needed, no trimming, values never
// reported, streaming buffered until acceptance.
type Config struct {
	// Length says when finish reason length is rejected. Zero is
	// LengthRejectStructured. Content filtering is always rejected.
	Length LengthPolicy
	// RequireFinish rejects a response without a finish reason (a stream cut
	// before its end). False (the default) accepts an empty finish reason,
	// which some adapters and fakes leave unset.
	RequireFinish bool
	// AllowEmptyText accepts an answer with neither text (white space counts
	// as none) nor tool calls. False (the default) rejects it as an incomplete
	// envelope.
	AllowEmptyText bool
	// TrimSpace, when true, trims white space around the answer's text before
	// the checks, and the accepted Response carries the trimmed text. It is the
	// only normalization the pipeline ever makes (no silent repair).
	// False (the default) leaves the text as it came; JSON tolerates
	// surrounding white space anyway.
	TrimSpace bool
	// JSON, when true, requires the answer's text to be one JSON value even
	// when the request has no Schema. It is implied when Checks or Semantic
	// are set, since checks judge a decoded answer. False (the default)
	// decodes the text only under a Schema or for checks.
	JSON bool
	// AssertFormat makes the schema keyword "format" an assertion (date-time,
	// email, ...) in every draft. False (the default) keeps it an
	// annotation, asserted only where a 2019-09 or 2020-12 metaschema's
	// $vocabulary requires it (see Schemas in the package documentation).
	AssertFormat bool
	// Checks are the typed Go checks of stage 4 (required fields, enums,
	// invariants), run in order; see [Check] and [Typed].
	Checks []Check
	// Semantic are the workload's semantic checks of stage 6, run in order
	// after the tool calls are checked.
	Semantic []Check
	// IncludeValues, when true, fills [Violation.Value] with the offending
	// value or the validator's message. False (the default) keeps answer
	// content out of violations, errors and logs.
	IncludeValues bool
	// PassThroughChunks, when true, streams chunks to the caller as they come,
	// unvalidated: the first token arrives early, but a caller may see an
	// answer that is then rejected. False (the default) buffers: when the
	// request streams (OnChunk set) and the pipeline inspects the text (a
	// Schema, Config.JSON, or checks), the inner call's chunks are held back
	// and the accepted text is delivered as one chunk; time to first token
	// becomes time to the whole answer, and a rejected answer is never shown.
	PassThroughChunks bool
	// Limits bound the JSON text decoded; the zero value means the defaults.
	Limits Limits
	// CacheSize bounds the number of compiled schemas kept, failed compilations
	// included; when full, an arbitrary entry is evicted. Zero means
	// DefaultCacheSize (128).
	CacheSize int
}

// Validator runs the acceptance pipeline on answers. Build one per
// workload with [New]; its method value Wrap is the Middleware. A Validator is
// safe for concurrent use.
type Validator struct {
	cfg    Config
	lim    Limits // cfg.Limits with defaults
	cache  *cache
	decode bool // checks need the decoded value
}

// New returns a Validator for cfg. It returns an error, starting with
// "validate:", for a negative limit, a nil check, or a Length that is not one
// of the LengthPolicy constants.
func New(cfg Config) (*Validator, error) {
	if err := withDefaults(&cfg); err != nil {
		return nil, err
	}
	noNil := func(name string, checks []Check) rules.Rule {
		i := slices.IndexFunc(checks, func(c Check) bool { return c == nil })
		return rules.If(i >= 0, "validate: Config."+name+"["+strconv.Itoa(i)+"] is nil")
	}
	if err := rules.First(
		rules.If(cfg.Length > LengthAccept, "validate: Config.Length is not a LengthPolicy"),
		noNil("Checks", cfg.Checks), noNil("Semantic", cfg.Semantic),
	); err != nil {
		return nil, err
	}
	cfg.Checks = append([]Check(nil), cfg.Checks...)
	cfg.Semantic = append([]Check(nil), cfg.Semantic...)
	return &Validator{
		cfg:    cfg,
		lim:    cfg.Limits,
		cache:  newCache(cfg.CacheSize, cfg.AssertFormat),
		decode: cfg.JSON || len(cfg.Checks) > 0 || len(cfg.Semantic) > 0,
	}, nil
}

// withDefaults sets each zero limit of cfg, and its CacheSize, to its
// default; a negative one is an error.
func withDefaults(cfg *Config) error {
	for _, f := range []struct {
		name string
		p    *int
		def  int
	}{
		{"Limits.MaxBytes", &cfg.Limits.MaxBytes, DefaultMaxBytes},
		{"Limits.MaxDepth", &cfg.Limits.MaxDepth, DefaultMaxDepth},
		{"Limits.MaxNumberLength", &cfg.Limits.MaxNumberLength, DefaultMaxNumber},
		{"Limits.MaxExponent", &cfg.Limits.MaxExponent, DefaultMaxExponent},
		{"CacheSize", &cfg.CacheSize, DefaultCacheSize},
	} {
		if *f.p < 0 {
			return errors.New("validate: Config." + f.name + " is negative")
		}
		*f.p = cmp.Or(*f.p, f.def)
	}
	return nil
}

// MustNew is like [New] but panics on error.
func MustNew(cfg Config) *Validator { return portico.Must(New(cfg)) }

// Prepare compiles (or finds in the cache) the schemas req carries, its Schema
// and its tools' Parameters, so that a request whose schema cannot compile
// fails before any model is called. It returns nil, or a Permanent
// *portico.Error wrapping [ErrSchema] (or, for a nil req,
// [portico.ErrNilRequest], also Permanent). Wrap calls it for every request.
func (v *Validator) Prepare(req *portico.Request) error {
	_, err := v.prepare(req)
	return err
}

// prepare is Prepare returning the compiled answer schema (nil without one),
// so that the pipeline does not look it up twice.
func (v *Validator) prepare(req *portico.Request) (*compiled, error) {
	if req == nil {
		return nil, portico.ErrNilRequest
	}
	var c *compiled
	if req.Schema != nil {
		if c = v.cache.get(req.Schema.JSON); c.err != nil {
			return nil, c.err
		}
	}
	return c, v.prepareTools(req.Tools)
}

// prepareTools compiles each tool's Parameters, returning the first error.
func (v *Validator) prepareTools(tools []portico.Tool) error {
	for i := range tools {
		if p := tools[i].Parameters; len(p) > 0 {
			if c := v.cache.get(p); c.err != nil {
				return c.err
			}
		}
	}
	return nil
}

// Check runs the acceptance pipeline on resp, the answer to req, and returns
// nil when it is accepted. On rejection it returns a *portico.Error of class
// InvalidResponse (Incompatible for a content filter or a cut at the route's
// output limit, Permanent for a cut at the request's MaxOutputTokens; those
// two with Status 200) wrapping a [*Rejection] that lists every violation, with
// Usage a copy of resp.Usage (the refused answer was billed; nil when resp
// is nil, which is rejected as [RuleNilResponse]); when a
// schema of req does not compile, a Permanent *portico.Error wrapping
// [ErrSchema]; for a nil req, [portico.ErrNilRequest] (Permanent). Check
// modifies neither req nor resp; with Config.TrimSpace it judges the trimmed
// text (Wrap then stores it in resp.Text). Check emits no
// event; Wrap does. It is for layers that judge answers themselves, such as a
// cascade's acceptance test.
func (v *Validator) Check(req *portico.Request, resp *portico.Response) error {
	sch, err := v.prepare(req)
	if err != nil {
		return err
	}
	p := pipeline{v: v}
	p.run(req, resp, sch)
	if len(p.out) == 0 {
		return nil
	}
	return p.reject(req, resp)
}
