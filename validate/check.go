package validate

import (
	"encoding/json"
	"errors"
	"strconv"
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
// semantics, such as an invoice's rules). It returns the violations it
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
// Typed panics if fn is nil.
func Typed[T any](fn func(T) []Violation) Check {
	if fn == nil {
		panic("validate: Typed of a nil func")
	}
	return func(a *Answer) []Violation {
		var t T
		if err := json.Unmarshal([]byte(a.Text), &t); err != nil {
			return []Violation{goTypeViolation(a.Text, err)}
		}
		return fn(t)
	}
}

// goTypeViolation is the violation of text that did not decode into a Go
// type with err: at the offending value, with the types, when err says
// which.
func goTypeViolation(text string, err error) Violation {
	v := Violation{Rule: RuleGoType}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		v.Pointer = pointerAt(text, te.Offset)
		v.Detail = "want " + te.Type.String() + ", got " + jsonKind(te.Value)
	}
	return v
}

// jsonKind returns the kind of JSON value an UnmarshalTypeError names
// ("number", "string", "object", ...) without the value itself, which
// encoding/json appends for numbers ("number 1.5") and which is answer
// content.
func jsonKind(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	return kind
}

// pointerAt returns the JSON pointer of the first value of text that ends at
// or after byte offset off (encoding/json reports a type mismatch's offset
// just after the offending value). It walks text's tokens, on the error path
// only.
func pointerAt(text string, off int64) string {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	p := jsonPath{{}} // the top level, outside any value
	for {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		if p.next(t) && dec.InputOffset() >= off {
			return p.pointer()
		}
	}
}

// jsonPath is where a walk of JSON tokens is: a frame for the top level,
// then one per object or array it is in, with the current member's key or
// element's index.
type jsonPath []struct {
	obj, expectKey bool
	key            string
	idx            int
}

// next moves p over the token t and reports whether t ends a value (a
// scalar, or an object's or array's end).
func (p *jsonPath) next(t json.Token) bool {
	top := &(*p)[len(*p)-1]
	switch t {
	case json.Delim('{'), json.Delim('['):
		top.idx++
		obj := t == json.Delim('{')
		*p = append(*p, jsonPath{{obj: obj, expectKey: obj, idx: -1}}...)
		return false
	case json.Delim('}'), json.Delim(']'):
		*p = (*p)[:len(*p)-1]
	default:
		if k, ok := t.(string); ok && top.expectKey {
			top.key, top.expectKey = k, false
			return false
		}
		top.idx++
	}
	parent := &(*p)[len(*p)-1]
	parent.expectKey = parent.obj // after a member's value, the next key
	return true
}

// pointer returns p as a JSON pointer.
func (p jsonPath) pointer() string {
	toks := make([]string, len(p)-1)
	for i, f := range p[1:] {
		toks[i] = f.key
		if !f.obj {
			toks[i] = strconv.Itoa(f.idx)
		}
	}
	return Pointer(toks...)
}
