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
			v := Violation{Rule: RuleGoType}
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				v.Pointer = pointerAt(a.Text, te.Offset)
				v.Detail = "want " + te.Type.String() + ", got " + jsonKind(te.Value)
			}
			return []Violation{v}
		}
		return fn(t)
	}
}

// jsonKind returns the kind of JSON value an UnmarshalTypeError names
// ("number", "string", "object", ...) without the value itself, which
// encoding/json appends for numbers ("number 1.5") and which is answer
// content.
func jsonKind(v string) string {
	if i := strings.IndexByte(v, ' '); i >= 0 {
		return v[:i]
	}
	return v
}

// pointerAt returns the JSON pointer of the first value of text that ends at
// or after byte offset off (encoding/json reports a type mismatch's offset
// just after the offending value). It walks text's tokens, on the error path
// only.
func pointerAt(text string, off int64) string {
	type frame struct {
		obj       bool
		expectKey bool
		key       string
		idx       int
	}
	var stack []frame
	path := func() string {
		toks := make([]string, len(stack))
		for i, f := range stack {
			if f.obj {
				toks[i] = f.key
			} else {
				toks[i] = strconv.Itoa(f.idx)
			}
		}
		return Pointer(toks...)
	}
	endValue := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	for {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		n := len(stack)
		if n > 0 && stack[n-1].obj && stack[n-1].expectKey {
			if k, ok := t.(string); ok {
				stack[n-1].key, stack[n-1].expectKey = k, false
				continue
			}
		}
		if d, ok := t.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:n-1]
			if dec.InputOffset() >= off {
				return path()
			}
			endValue()
			continue
		}
		if n > 0 && !stack[n-1].obj {
			stack[n-1].idx++
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, expectKey: true})
		case json.Delim('['):
			stack = append(stack, frame{idx: -1})
		default:
			if dec.InputOffset() >= off {
				return path()
			}
			endValue()
		}
	}
}
