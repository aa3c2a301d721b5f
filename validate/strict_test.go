package validate

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func problems(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Rule+"@"+p.Pointer)
	}
	return out
}

func TestStrictCompatibleAcceptsTheSubset(t *testing.T) {
	const ok = `{
	  "type": "object",
	  "additionalProperties": false,
	  "required": ["name", "unit", "tags", "when", "pick"],
	  "properties": {
	    "name": {"type": "string", "description": "who", "pattern": "^[A-Z]"},
	    "unit": {"type": ["string", "null"], "enum": ["C", "F", null]},
	    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "minItems": 1},
	    "when": {"type": "string", "format": "date-time"},
	    "pick": {"anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}]}
	  },
	  "$defs": {
	    "tag": {"type": "object", "additionalProperties": false, "required": ["k"], "properties": {"k": {"const": "x"}}}
	  }
	}`
	if got := StrictCompatible(json.RawMessage(ok)); got != nil {
		t.Fatalf("StrictCompatible(ok) = %q, want nil", problems(got))
	}
}

func TestStrictCompatibleSaysWhyNot(t *testing.T) {
	const bad = `{
	  "type": "object",
	  "required": ["a"],
	  "properties": {
	    "a": {"type": "string", "minLength": 1},
	    "b": {"type": "object", "additionalProperties": true, "properties": {}},
	    "c": {"allOf": [{"type": "string"}], "format": "iri"},
	    "d": {"$ref": "https://example.com/s.json"}
	  }
	}`
	want := []string{
		"additional_properties@",
		"required@/properties/b",
		"required@/properties/c",
		"required@/properties/d",
		"keyword@/properties/a/minLength",
		"additional_properties@/properties/b",
		"type@/properties/c",
		"keyword@/properties/c/allOf",
		"format@/properties/c/format",
		"ref@/properties/d/$ref",
	}
	if got := problems(StrictCompatible(json.RawMessage(bad))); !equal(got, want) {
		t.Fatalf("StrictCompatible(bad) =\n%q\nwant\n%q", got, want)
	}
}

func TestStrictCompatibleRootAndLimits(t *testing.T) {
	obj := func(props string) string {
		return `{"type":"object","additionalProperties":false,"properties":{` + props + `},"required":[` + keysOf(props) + `]}`
	}
	// 10 levels of objects, the limit, and 11.
	ten := obj("")
	for range 9 {
		ten = obj(`"x":` + ten)
	}
	deep := obj(`"x":` + ten)
	var many []string
	for i := range 5001 {
		many = append(many, `"p`+strconv.Itoa(i)+`":{"type":"string"}`)
	}
	var enum []string
	for i := range 1001 {
		enum = append(enum, `"`+strconv.Itoa(i)+`"`)
	}
	bigEnum := `"e":{"enum":[` + strings.Join(enum, ",") + `]}`
	longEnum := make([]string, 300)
	for i := range longEnum {
		longEnum[i] = `"` + strings.Repeat("v", 60) + strconv.Itoa(i) + `"`
	}
	tests := []struct {
		name, schema string
		want         []string
	}{
		{"not JSON", `{`, []string{"invalid_json@"}},
		{"array root", `{"type":"array","items":{"type":"string"}}`, []string{"root_object@"}},
		{"anyOf root", `{"anyOf":[` + obj("") + `]}`, []string{"root_object@"}},
		{"untyped root", `{"additionalProperties":false,"properties":{}}`, []string{"root_object@", "type@"}},
		{"enum root", `{"type":"object","enum":[{}],"additionalProperties":false,"properties":{}}`, []string{"root_object@"}},
		{"object without properties", `{"type":"object","additionalProperties":false}`, []string{"properties@"}},
		{"array without items", obj(`"a":{"type":["array","null"]}`), []string{"items@/properties/a"}},
		{"untyped property", obj(`"a":{"description":"anything"},"b":{"enum":[1]},"c":{"const":"x"},"d":{"$ref":"#"}`), []string{"type@/properties/a"}},
		{"120,000 characters", obj(`"e":{"enum":["` + strings.Repeat("é", 120000-len(`e`)) + `"]}`), nil},
		{"120,001 characters", obj(`"e":{"enum":["` + strings.Repeat("é", 120001-len(`e`)) + `"]}`), []string{"string_length@"}},
		{"10 levels", ten, nil},
		{"11 levels", deep, []string{"nesting@" + strings.Repeat("/properties/x", 10)}},
		{"5001 properties", obj(strings.Join(many, ",")), []string{"property_count@"}},
		{"1001 enum values", obj(bigEnum), []string{"enum_count@"}},
		{"long big enum", obj(`"e":{"enum":[` + strings.Join(longEnum, ",") + `]}`), []string{"enum_length@/properties/e/enum"}},
	}
	for _, tt := range tests {
		got := problems(StrictCompatible(json.RawMessage(tt.schema)))
		if !equal(got, tt.want) {
			t.Errorf("%s: StrictCompatible = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// keysOf lists the top-level keys of a properties body for "required".
func keysOf(props string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte("{"+props+"}"), &m); err != nil {
		panic(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, strconv.Quote(k))
	}
	return strings.Join(keys, ",")
}

// A StrictError matches ErrNotStrict and names every problem's rule and
// pointer, up to 100, counting the rest.
func TestStrictError(t *testing.T) {
	e := &StrictError{Problems: StrictCompatible([]byte(`{"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}}`))}
	const want = "validate: schema outside the strict subset: 3 problems: " +
		"additional_properties at /, required at /properties/a, keyword at /properties/a/minLength"
	if e.Error() != want || !errors.Is(e, ErrNotStrict) {
		t.Errorf("Error() = %q, Is(ErrNotStrict) = %v; want %q, true", e.Error(), errors.Is(e, ErrNotStrict), want)
	}
	many := &StrictError{Problems: make([]Problem, 250)}
	for i := range many.Problems {
		many.Problems[i] = Problem{Pointer: "/p" + strconv.Itoa(i), Rule: StrictRequired}
	}
	msg := many.Error()
	if !strings.Contains(msg, "250 problems: required at /p0,") || !strings.Contains(msg, "required at /p99, 150 more") || strings.Contains(msg, "/p100") {
		t.Errorf("Error() of 250 problems = %q, want the first 100 named, then 150 more", msg)
	}
}
