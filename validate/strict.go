package validate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Problem is one reason a schema does not fit a provider's strict
// structured-output subset; see [StrictCompatible].
type Problem struct {
	// Pointer is the RFC 6901 JSON pointer, within the schema, of the schema
	// node or keyword at fault ("" is the root).
	Pointer string
	// Rule names the broken requirement: one of the Strict* constants.
	Rule string
	// Detail is a short explanation: the keyword, property or limit concerned.
	Detail string
}

// ErrNotStrict is matched (errors.Is) by a [*StrictError]: a schema sent in
// a provider's strict structured-output mode is outside its subset.
var ErrNotStrict = errors.New("validate: schema outside the strict subset")

// StrictError says why a schema does not fit a provider's strict
// structured-output subset: every [Problem] [StrictCompatible] found. An
// adapter that sends schemas in OpenAI's strict mode refuses such a request
// with it before sending (see package provider/openai); it matches
// [ErrNotStrict].
type StrictError struct {
	// Problems are every problem found, in StrictCompatible's order.
	Problems []Problem
}

// maxStrictShown bounds the problems a StrictError's message names; the
// Problems field holds them all.
const maxStrictShown = MaxViolations

// Error names the problems' rules and pointers, up to 100, then counts
// the rest: "validate: schema outside the strict subset: 2 problems:
// additional_properties at /properties/a, keyword at /properties/b/minLength".
// The root's pointer is written "/".
func (e *StrictError) Error() string {
	var b strings.Builder
	b.WriteString(ErrNotStrict.Error() + ": " + counted(len(e.Problems), "problem"))
	for i, p := range e.Problems[:min(len(e.Problems), maxStrictShown)] {
		b.WriteString(listSep(i) + p.Rule + " at " + cmp.Or(p.Pointer, "/"))
	}
	if more := len(e.Problems) - maxStrictShown; more > 0 {
		b.WriteString(", " + strconv.Itoa(more) + " more")
	}
	return b.String()
}

// Is reports whether target is ErrNotStrict.
func (e *StrictError) Is(target error) bool { return target == ErrNotStrict }

// The rules [StrictCompatible] reports.
const (
	StrictInvalid              = "invalid_json"          // the schema is not JSON
	StrictRootObject           = "root_object"           // the root must be an object schema, not anyOf
	StrictAdditionalProperties = "additional_properties" // every object needs "additionalProperties": false
	StrictRequired             = "required"              // every property must be listed in "required"
	StrictKeyword              = "keyword"               // a keyword outside the supported subset
	StrictFormat               = "format"                // a "format" value outside the supported set
	StrictRef                  = "ref"                   // a $ref outside the document
	StrictPropertyCount        = "property_count"        // more than 5,000 object properties in all
	StrictNesting              = "nesting"               // more than 10 levels of object nesting
	StrictStringLength         = "string_length"         // names, enum and const strings over 120,000 characters
	StrictEnumCount            = "enum_count"            // more than 1,000 enum values in all
	StrictEnumLength           = "enum_length"           // an enum of over 250 strings totalling over 15,000 characters
	StrictProperties           = "properties"            // an object schema without "properties" (an empty {} is fine)
	StrictItems                = "items"                 // an array schema without "items"
	StrictType                 = "type"                  // a schema with none of type, anyOf, $ref, enum, const
)

// OpenAI's documented limits for strict structured outputs.
const (
	strictMaxProperties   = 5000
	strictMaxNesting      = 10
	strictMaxStringLength = 120000
	strictMaxEnumValues   = 1000
	strictBigEnum         = 250
	strictMaxBigEnumChars = 15000
)

// strictKeywords is the subset of JSON Schema OpenAI's strict mode accepts:
// structure (type, properties, required, additionalProperties, items, anyOf,
// enum, const, $ref, $defs), annotations, and the documented type-specific
// keywords (string: pattern, format; number: multipleOf, maximum,
// exclusiveMaximum, minimum, exclusiveMinimum; array: minItems, maxItems),
// each with the check of its value and the walk of the subschemas it holds
// (nil: none). Set by init, since the checks walk back into node.
var strictKeywords map[string]keywordCheck

// keywordCheck checks the value val of a keyword at at, in a schema nested
// in depth objects.
type keywordCheck func(w *strictWalker, val any, at string, depth int)

func init() {
	strictKeywords = map[string]keywordCheck{
		"type": nil, "required": nil, "$schema": nil, "$id": nil, "$comment": nil, "title": nil, "description": nil,
		"pattern": nil, "multipleOf": nil, "maximum": nil, "exclusiveMaximum": nil, "minimum": nil, "exclusiveMinimum": nil,
		"minItems": nil, "maxItems": nil,
		"properties":           (*strictWalker).members,
		"$defs":                (*strictWalker).defs,
		"definitions":          (*strictWalker).defs,
		"items":                (*strictWalker).node,
		"anyOf":                (*strictWalker).anyOf,
		"additionalProperties": (*strictWalker).additional,
		"enum":                 (*strictWalker).enum,
		"const":                (*strictWalker).constant,
		"format":               (*strictWalker).format,
		"$ref":                 (*strictWalker).ref,
	}
}

var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// StrictCompatible reports why schema does not fit OpenAI's strict
// structured-output subset (response_format json_schema with strict: true,
// and strict function calling), or nil when it fits: the rules of OpenAI's
// Structured Outputs guide ("Supported schemas") and the 400s the API returns
// although the guide does not list them, as OpenAI strict mode in the package
// documentation lists them. A schema that is not JSON gives one
// [StrictInvalid] problem.
//
// Each [Problem] gives the JSON pointer of the offending node and the rule,
// in document order (object keys sorted), then the document-wide totals
// (StrictPropertyCount, StrictStringLength, StrictEnumCount) at the root
// pointer ""; StrictNesting is reported once, at the first node too deep.
// StrictCompatible does not follow $ref when counting nesting. It is safe
// for concurrent use.
func StrictCompatible(schema json.RawMessage) []Problem {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return []Problem{{Rule: StrictInvalid, Detail: "schema is not JSON"}}
	}
	w := strictWalker{}
	if detail := rootProblem(doc); detail != "" {
		w.add("", StrictRootObject, detail)
	}
	w.node(doc, "", 0)
	w.totals()
	return w.out
}

// totals reports the document-wide totals over their limits, at the root.
func (w *strictWalker) totals() {
	for _, t := range []struct {
		n, limit   int
		rule, what string
	}{
		{w.props, strictMaxProperties, StrictPropertyCount, " properties"},
		{w.chars, strictMaxStringLength, StrictStringLength, " characters"},
		{w.enums, strictMaxEnumValues, StrictEnumCount, " enum values"},
	} {
		if t.n > t.limit {
			w.add("", t.rule, strconv.Itoa(t.n)+t.what+", limit "+strconv.Itoa(t.limit))
		}
	}
}

// rootProblem says why doc's root is not an object schema, "" when it is one.
func rootProblem(doc any) string {
	root, _ := doc.(map[string]any)
	switch {
	case root == nil:
		return "root is not an object schema"
	case root["anyOf"] != nil:
		return "root is anyOf"
	case root["enum"] != nil:
		return "root is enum"
	case root["type"] != "object":
		return `root "type" is not "object"`
	}
	return ""
}

type strictWalker struct {
	out                 []Problem
	props, chars, enums int
	nestingReported     bool
}

func (w *strictWalker) add(ptr, rule, detail string) {
	w.out = append(w.out, Problem{Pointer: ptr, Rule: rule, Detail: detail})
}

func isObjectSchema(m map[string]any) bool {
	return hasKey(m, "properties") || hasType(m, "object")
}

// hasType reports whether m's "type" is name or a list holding it.
func hasType(m map[string]any, name string) bool {
	switch t := m["type"].(type) {
	case string:
		return t == name
	case []any:
		return slices.Contains(t, any(name))
	}
	return false
}

// hasKey reports whether m has the keyword k, whatever its value.
func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// node checks the schema s at ptr, nested in depth objects.
func (w *strictWalker) node(s any, ptr string, depth int) {
	m, ok := s.(map[string]any)
	if !ok {
		if _, isBool := s.(bool); isBool {
			w.add(ptr, StrictKeyword, "boolean schema")
		}
		return
	}
	w.typed(m, ptr)
	if isObjectSchema(m) {
		depth++
		w.object(m, ptr, depth)
	}
	w.keywords(m, ptr, depth)
}

// keywords checks each keyword of the schema m at ptr, in sorted order.
func (w *strictWalker) keywords(m map[string]any, ptr string, depth int) {
	for _, kw := range slices.Sorted(maps.Keys(m)) {
		check, ok := strictKeywords[kw]
		switch {
		case !ok:
			w.add(under(ptr, kw), StrictKeyword, kw)
		case check != nil:
			check(w, m[kw], under(ptr, kw), depth)
		}
	}
}

// typed checks that m says what it is (type, anyOf, $ref, enum or const),
// and that an array schema says what its items are.
func (w *strictWalker) typed(m map[string]any, ptr string) {
	if !slices.ContainsFunc([]string{"type", "anyOf", "$ref", "enum", "const"}, func(kw string) bool { return hasKey(m, kw) }) {
		w.add(ptr, StrictType, `no "type"`)
	}
	if hasType(m, "array") && !hasKey(m, "items") {
		w.add(ptr, StrictItems, `"items" missing`)
	}
}

// object checks the object schema m at ptr, the depth'th object level: its
// properties listed, closed, each one required, and nested at most 10 deep.
func (w *strictWalker) object(m map[string]any, ptr string, depth int) {
	if !hasKey(m, "properties") {
		w.add(ptr, StrictProperties, `"properties" missing`)
	}
	w.nesting(ptr, depth)
	if ap, ok := m["additionalProperties"].(bool); !ok || ap {
		w.add(ptr, StrictAdditionalProperties, `"additionalProperties": false missing`)
	}
	w.properties(m, ptr)
}

// properties counts the properties of the object schema m at ptr towards
// the document's totals, and checks that each one is required.
func (w *strictWalker) properties(m map[string]any, ptr string) {
	required := stringSet(m["required"])
	props, _ := m["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		w.props++
		w.chars += utf8.RuneCountInString(name)
		if !required[name] {
			w.add(under(ptr, "properties", name), StrictRequired, "property "+strconv.Quote(name)+" not in required")
		}
	}
}

// nesting reports the first object schema nested deeper than strict mode allows.
func (w *strictWalker) nesting(ptr string, depth int) {
	if depth > strictMaxNesting && !w.nestingReported {
		w.nestingReported = true
		w.add(ptr, StrictNesting, strconv.Itoa(depth)+" levels, limit 10")
	}
}

// stringSet returns the strings of the JSON array list as a set.
func stringSet(list any) map[string]bool {
	set := map[string]bool{}
	l, _ := list.([]any)
	for _, x := range l {
		if s, ok := x.(string); ok {
			set[s] = true
		}
	}
	return set
}

// members walks the schemas of a "properties" object at at.
func (w *strictWalker) members(val any, at string, depth int) {
	m, _ := val.(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		w.node(m[name], under(at, name), depth)
	}
}

// defs walks the schemas of a "$defs" (or "definitions") object at at,
// each starting again at depth 0, its names counted towards the
// document's characters.
func (w *strictWalker) defs(val any, at string, _ int) {
	m, _ := val.(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		w.chars += utf8.RuneCountInString(name)
		w.node(m[name], under(at, name), 0)
	}
}

// anyOf walks the branches of an "anyOf" list at at.
func (w *strictWalker) anyOf(val any, at string, depth int) {
	list, _ := val.([]any)
	for i, sub := range list {
		w.node(sub, under(at, strconv.Itoa(i)), depth)
	}
}

// additional walks the schema of "additionalProperties" at at, if it is one.
func (w *strictWalker) additional(val any, at string, depth int) {
	if sub, ok := val.(map[string]any); ok {
		w.node(sub, at, depth)
	}
}

// constant counts a string "const" towards the document's characters.
func (w *strictWalker) constant(val any, _ string, _ int) {
	s, _ := val.(string)
	w.chars += utf8.RuneCountInString(s)
}

// format checks that a "format" at at is one strict mode supports.
func (w *strictWalker) format(val any, at string, _ int) {
	if f, _ := val.(string); !strictFormats[f] {
		w.add(at, StrictFormat, f)
	}
}

// ref checks that a "$ref" at at points within the schema.
func (w *strictWalker) ref(val any, at string, _ int) {
	if r, _ := val.(string); !strings.HasPrefix(r, "#") {
		w.add(at, StrictRef, "only references within the schema")
	}
}

// enum counts the "enum" list at at towards the document's totals, and
// checks the limit on a big enum of strings.
func (w *strictWalker) enum(val any, at string, _ int) {
	list, _ := val.([]any)
	w.enums += len(list)
	strs, total := stringsIn(list)
	w.chars += total
	if strs > strictBigEnum && total > strictMaxBigEnumChars {
		w.add(at, StrictEnumLength, strconv.Itoa(strs)+" strings, "+strconv.Itoa(total)+" characters, limit 15000")
	}
}

// stringsIn counts the strings of list and their characters.
func stringsIn(list []any) (n, chars int) {
	for _, e := range list {
		if s, ok := e.(string); ok {
			n++
			chars += utf8.RuneCountInString(s)
		}
	}
	return n, chars
}
