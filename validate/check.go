package validate

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/portico-llm/portico"
)

// Answer is what a [Check] inspects: the request, its response and the
// answer's text decoded once by the pipeline. Checks must not modify it.
type Answer struct {
	// Request is the request as the caller made it.
	Request *portico.Request
	// Response is the answer under judgement.
	Response *portico.Response
	// Text is the answer's text, trimmed of surrounding white space when
	// Config.TrimSpace is set.
	Text string
	// Value is Text decoded as JSON (objects as map[string]any, arrays as
	// []any, numbers as json.Number). Checks run only when the text decoded,
	// so Value is always set for them; null decodes as nil.
	Value any
}

// Check is a user check of the pipeline's stage 4 ([Config.Checks]: required
// fields, enums, invariants) or stage 6 ([Config.Semantic]: workload
// semantics, such as seed 003's invoice rules). It returns the violations it
// finds, nil when the answer passes. The pipeline sets each violation's Stage
// and clears Value unless Config.IncludeValues is set; Rule should be a short
// stable name, Pointer the RFC 6901 pointer of the offending value (see
// [Pointer]). Configuring any check makes the pipeline require a JSON answer;
// checks run only when the text decoded (after the size limits), on the
// caller's goroutine, possibly concurrently for different answers.
type Check func(a *Answer) []Violation

// Typed returns a Check that decodes the answer's text into a T with
// encoding/json and passes it to fn. It costs a second decode of the text
// (into the Go type); checks over the shared [Answer.Value] do not. When the
// text does not fit T (a string where T has a number), Typed reports one
// violation of rule [RuleGoType] at the field's pointer, and fn is not called.
func Typed[T any](fn func(T) []Violation) Check {
	if fn == nil {
		panic("validate: Typed of a nil func")
	}
	return func(a *Answer) []Violation {
		var t T
		if err := json.Unmarshal([]byte(a.Text), &t); err != nil {
			v := Violation{Rule: RuleGoType}
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				v.Pointer = fieldPointer(te.Field)
				v.Detail = "want " + te.Type.String() + ", got " + te.Value
			}
			return []Violation{v}
		}
		return fn(t)
	}
}

// fieldPointer turns encoding/json's dotted field path ("lines.0.total") into
// a JSON pointer. The path names Go fields by their JSON keys, so this is exact
// unless a key itself holds a dot.
func fieldPointer(field string) string {
	if field == "" {
		return ""
	}
	return Pointer(strings.Split(field, ".")...)
}
