package validate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/portico-llm/portico"
)

// fuzzSchema exercises the number paths of the validator (integer, multipleOf,
// minimum use math/big), strings, arrays and nesting.
const fuzzSchema = `{
  "type": "object",
  "properties": {
    "n": {"type": "integer", "minimum": -1000, "multipleOf": 0.5},
    "s": {"type": "string", "pattern": "^[a-z]*$"},
    "a": {"type": "array", "items": {"$ref": "#"}},
    "e": {"enum": [1, "x", null, [1, 2], {"k": 1}]}
  },
  "required": ["n"]
}`

// FuzzCheck feeds arbitrary bytes to the pipeline as the answer's text and as
// a tool call's arguments. It must never panic, must classify every outcome,
// and may only accept a JSON value within the limits.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"n": 1}`, `{"n": 1e400}`, `{"n": 1e401}`, `{"n": -0.5, "a": [{"n": 2}]}`,
		`{"n": 1` + strings.Repeat("0", 70) + `}`, strings.Repeat("[", 100),
		`{"s": "\"\\[[[", "n": 0}`, `{"e": {"k": 1}, "n": 2}`, "", " ", "nul", `"\ud800"`,
		"{\"n\":1}\x00", `{"n": 1}{}`,
	} {
		f.Add(s)
	}
	v := MustNew(Config{MaxBytes: 4096, MaxDepth: 16, Checks: []Check{func(a *Answer) []Violation { return nil }}})
	req := &portico.Request{
		Schema: &portico.Schema{JSON: []byte(fuzzSchema)},
		Tools:  []portico.Tool{{Name: "t", Parameters: []byte(fuzzSchema)}},
	}
	f.Fuzz(func(t *testing.T, text string) {
		resp := &portico.Response{Text: text, FinishReason: portico.FinishStop,
			ToolCalls: []portico.ToolCall{{Name: "t", Arguments: json.RawMessage(text)}}}
		err := v.Check(req, resp)
		if err == nil {
			if !json.Valid([]byte(text)) {
				t.Fatalf("Check accepted invalid JSON %q", text)
			}
			if rule, _ := v.lim.scan(text); rule != "" {
				t.Fatalf("Check accepted %q beyond the limits (%s)", text, rule)
			}
			return
		}
		var r *Rejection
		if portico.ClassOf(err) != portico.InvalidResponse || !errors.As(err, &r) || len(r.Violations) == 0 {
			t.Fatalf("Check(%q) = %v, want a rejection with violations", text, err)
		}
		for _, vi := range r.Violations {
			if vi.Rule == "" || vi.Value != "" {
				t.Fatalf("violation %+v: empty rule or leaked value", vi)
			}
		}
	})
}

// FuzzParse checks the pipeline's one-pass decoder against the schema
// library's own decoding (jsonschema.UnmarshalJSON: encoding/json with
// UseNumber) on arbitrary bytes: with limits that do not bind, both accept
// the same texts and give deeply equal values; with the default limits, on
// valid JSON, parse breaks exactly the limit the independent scan finds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-2.5e-3,true,false,null,{"b":"c"}],"a":0}`, `"\u00e9\ud83d\ude00\ud800x\udc00\ud800\u0041"`,
		"\"\xff\xfe ok \xed\xa0\x80\"", `"\"\\\/\b\f\n\r\t"`, `[01]`, `-`, `1.`, `1e`, `-0.0E+00`, ` [ ] `, `{}`,
		`{"a" 1}`, `[1,]`, `{"a":1,}`, "\"\x01\"", `"\x"`, `"\u12"`, `tru`, `nul`, `1 2`, "\ufeff{}",
		strings.Repeat("[", 70) + strings.Repeat("]", 70), `[1e401]`, `[1` + strings.Repeat("0", 70) + `]`,
	} {
		f.Add(s)
	}
	loose := limits{maxBytes: 1 << 20, maxDepth: 10000, maxNumber: 1 << 20, maxExponent: 1 << 30}
	strict := MustNew(Config{}).lim
	f.Fuzz(func(t *testing.T, s string) {
		want, werr := jsonschema.UnmarshalJSON(strings.NewReader(s))
		got, rule, detail := loose.parse(s)
		if (rule == "") != (werr == nil) {
			t.Fatalf("parse(%q) = %v, %s (%s); encoding/json: %v", s, got, rule, detail, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("parse(%q) = %#v, want %#v", s, got, want)
		}
		if rule != "" && detail == "" {
			t.Fatalf("parse(%q) broke %s with no detail", s, rule)
		}
		if werr != nil {
			return
		}
		_, rule, _ = strict.parse(s)
		if want, _ := strict.scan(s); rule != want {
			t.Fatalf("parse(%q) broke %q, scan %q", s, rule, want)
		}
	})
}
