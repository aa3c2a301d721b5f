package validate

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/enum"
)

// Stage names a stage of the acceptance pipeline, in the order the stages run
// (see the package documentation).
type Stage uint8

// The pipeline's stages.
const (
	// StageEnvelope: the transport completed and the envelope is whole (a
	// response, text when no tool call is asked for, tool calls when the finish
	// reason says so).
	StageEnvelope Stage = iota + 1
	// StageFinish: the finish reason is acceptable (no content filter, no
	// truncation where the full output is needed).
	StageFinish
	// StageSchema: the answer's text is one JSON value, within the size limits,
	// valid against the request's schema.
	StageSchema
	// StageTyped: the user's typed Go checks ([Config.Checks]): required
	// fields, enums, invariants.
	StageTyped
	// StageTools: every tool call names a registered tool and its arguments are
	// JSON valid against the tool's parameter schema.
	StageTools
	// StageSemantic: the workload's semantic checks ([Config.Semantic]).
	StageSemantic
)

var stageNames = [...]string{
	StageEnvelope: "envelope",
	StageFinish:   "finish",
	StageSchema:   "schema",
	StageTyped:    "typed",
	StageTools:    "tools",
	StageSemantic: "semantic",
}

// String returns the stage's name ("schema").
func (s Stage) String() string { return enum.Name(stageNames[:], s, "Stage") }

// The rules the pipeline itself reports in [Violation.Rule]. Schema violations
// use the failing JSON Schema keyword instead ("required", "minimum", "enum",
// "additionalProperties", ...); user checks use their own rule names.
const (
	RuleNilResponse     = "nil_response"      // the inner Model returned neither a response nor an error
	RuleEmptyText       = "empty_text"        // no text (or only white space) and no tool call
	RuleEmbeddings      = "embeddings"        // an embedding request's answer lacks a vector per input, or their lengths differ from one another or from Dimensions
	RuleToolCallsAbsent = "tool_calls_absent" // finish reason tool_calls without any tool call
	RuleFinishMissing   = "finish_missing"    // no finish reason, with Config.RequireFinish
	RuleContentFilter   = "content_filter"    // the provider withheld content
	RuleTruncated       = "truncated"         // finish reason length where the full output is needed
	RuleMaxBytes        = "max_bytes"         // the JSON text exceeds Limits.MaxBytes
	RuleMaxDepth        = "max_depth"         // the JSON text nests deeper than Limits.MaxDepth
	RuleMaxNumber       = "max_number"        // a number literal exceeds Limits.MaxNumberLength or Limits.MaxExponent
	RuleJSON            = "json"              // the text is not exactly one JSON value
	RuleGoType          = "go_type"           // a typed check could not decode the value into its Go type
	RuleToolName        = "tool_name"         // a tool call names a tool the request did not declare
)

// Violation is one way an answer breaks its contract. It says where (a JSON
// pointer) and which rule, never the offending value unless
// [Config.IncludeValues] is set, because answers may hold private content.
type Violation struct {
	// Stage is the pipeline stage that found the violation; the pipeline sets it.
	Stage Stage
	// Call is the index in Response.ToolCalls of the call concerned, for
	// StageTools violations; 0 otherwise.
	Call int
	// Pointer is the RFC 6901 JSON pointer of the offending value within the
	// checked document: the answer's JSON value, or for StageTools the call's
	// arguments. "" is the whole document (or, for envelope and finish
	// violations, the response). Pointers name object keys, which may come from
	// the answer (an additional property); they never carry values.
	Pointer string
	// Rule names what was broken: a Rule* constant, the JSON Schema keyword
	// ("required", "type", "minimum"), or a user check's rule name.
	Rule string
	// Schema is the JSON pointer of the failing keyword within the schema
	// ("/properties/total/minimum"), for schema violations; "" otherwise.
	Schema string
	// Detail is a short, content-free explanation ("want number, got string",
	// "offset 17"), or "" when the rule says it all.
	Detail string
	// Value is the offending value or the validator's full message, which may
	// quote the answer; set only when Config.IncludeValues is true (the pipeline
	// clears it otherwise, also for user checks).
	Value string
}

// String formats v content-free as "stage rule at pointer" ("schema minimum
// at /total"), with " in call N" after the rule for StageTools and "(root)"
// for the empty pointer.
func (v Violation) String() string {
	s := v.Stage.String() + " " + v.Rule
	if v.Stage == StageTools {
		s += " in call " + strconv.Itoa(v.Call)
	}
	return s + " at " + cmp.Or(v.Pointer, "(root)")
}

// Rejection is the typed error of a rejected answer: every violation the
// pipeline found, in stage order. Rejections reach callers wrapped in a
// *portico.Error (see Check for its class); get one with errors.As.
type Rejection struct {
	// Violations lists every violation found, up to [MaxViolations].
	Violations []Violation
	// Omitted counts the violations beyond [MaxViolations] that were not
	// listed.
	Omitted int
	// Response is the rejected answer, for logging by the application or human
	// review. It holds answer content: never log it unredacted.
	Response *portico.Response
}

// Is reports whether target is [portico.ErrAnswerRefused], which a
// Rejection matches when it judged what was asked of the answer (the
// schema, the checks, the tools' arguments): one with a violation of the
// envelope or the finish (no answer, no text, a missing finish reason)
// says the route is failing whoever asks, and does not match it.
func (r *Rejection) Is(target error) bool {
	return target == portico.ErrAnswerRefused && !slices.ContainsFunc(r.Violations, func(v Violation) bool {
		return v.Stage == StageEnvelope || v.Stage == StageFinish
	})
}

// Error lists the violations' stages and rules, content-free:
// "validate: rejected: 2 violations: schema/minimum, semantic/currency". The
// count includes Omitted; at most the first 8 violations are named, then
// ", ...".
func (r *Rejection) Error() string {
	var b strings.Builder
	b.WriteString("validate: rejected: " + counted(len(r.Violations)+r.Omitted, "violation"))
	const shown = 8
	for i, v := range r.Violations[:min(len(r.Violations), shown)] {
		b.WriteString(listSep(i) + v.Stage.String() + "/" + v.Rule)
	}
	if len(r.Violations) > shown {
		b.WriteString(", ...")
	}
	return b.String()
}

// counted returns "n noun", the noun plural unless n is 1 ("2 violations").
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// listSep returns ": " before a message list's first item, ", " before the others.
func listSep(i int) string {
	if i == 0 {
		return ": "
	}
	return ", "
}

// Has reports whether r lists a violation of rule at pointer.
func (r *Rejection) Has(rule, pointer string) bool {
	return slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Rule == rule && v.Pointer == pointer })
}

// Pointer returns the RFC 6901 JSON pointer of the given path of object keys
// and array indices (as decimal strings): Pointer("lines", "0", "a/b") is
// "/lines/0/a~1b". Pointer() is "", the whole document.
func Pointer(tokens ...string) string { return under("", tokens...) }

// under returns the JSON pointer of tokens under the pointer ptr.
func under(ptr string, tokens ...string) string {
	var b strings.Builder
	b.WriteString(ptr)
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(tokenEscaper.Replace(t))
	}
	return b.String()
}

// tokenEscaper escapes a reference token: "~" as "~0", "/" as "~1".
var tokenEscaper = strings.NewReplacer("~", "~0", "/", "~1")
