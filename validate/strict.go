package validate

import (
	"bytes"
	"encoding/json"
	"errors"
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
	b.WriteString(ErrNotStrict.Error())
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(len(e.Problems)))
	if len(e.Problems) == 1 {
		b.WriteString(" problem")
	} else {
		b.WriteString(" problems")
	}
	for i, p := range e.Problems {
		if i == maxStrictShown {
			b.WriteString(", ")
			b.WriteString(strconv.Itoa(len(e.Problems) - i))
			b.WriteString(" more")
			break
		}
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(p.Rule)
		b.WriteString(" at ")
		if p.Pointer == "" {
			b.WriteByte('/')
		} else {
			b.WriteString(p.Pointer)
		}
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
// exclusiveMaximum, minimum, exclusiveMinimum; array: minItems, maxItems).
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "anyOf": true, "enum": true, "const": true,
	"$ref": true, "$defs": true, "definitions": true,
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"pattern": true, "format": true,
	"multipleOf": true, "maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"minItems": true, "maxItems": true,
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
	root, _ := doc.(map[string]any)
	switch {
	case root == nil:
		w.add("", StrictRootObject, "root is not an object schema")
	case root["anyOf"] != nil:
		w.add("", StrictRootObject, "root is anyOf")
	case root["enum"] != nil:
		w.add("", StrictRootObject, "root is enum")
	case root["type"] != "object":
		w.add("", StrictRootObject, `root "type" is not "object"`)
	}
	w.node(doc, "", 0)
	if w.props > strictMaxProperties {
		w.add("", StrictPropertyCount, strconv.Itoa(w.props)+" properties, limit 5000")
	}
	if w.chars > strictMaxStringLength {
		w.add("", StrictStringLength, strconv.Itoa(w.chars)+" characters, limit 120000")
	}
	if w.enums > strictMaxEnumValues {
		w.add("", StrictEnumCount, strconv.Itoa(w.enums)+" enum values, limit 1000")
	}
	return w.out
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
	_, hasProps := m["properties"]
	return hasProps || hasType(m, "object")
}

// hasType reports whether m's "type" is name or a list holding it.
func hasType(m map[string]any, name string) bool {
	switch t := m["type"].(type) {
	case string:
		return t == name
	case []any:
		for _, x := range t {
			if x == name {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(ptr string, tok string) string {
	var b strings.Builder
	b.WriteString(ptr)
	b.WriteByte('/')
	escapeToken(&b, tok)
	return b.String()
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
	_, typed := m["type"]
	for _, kw := range [...]string{"anyOf", "$ref", "enum", "const"} {
		if _, ok := m[kw]; ok {
			typed = true
		}
	}
	if !typed {
		w.add(ptr, StrictType, `no "type"`)
	}
	if hasType(m, "array") {
		if _, ok := m["items"]; !ok {
			w.add(ptr, StrictItems, `"items" missing`)
		}
	}
	if isObjectSchema(m) {
		if _, ok := m["properties"]; !ok {
			w.add(ptr, StrictProperties, `"properties" missing`)
		}
		depth++
		if depth > strictMaxNesting && !w.nestingReported {
			w.nestingReported = true
			w.add(ptr, StrictNesting, strconv.Itoa(depth)+" levels, limit 10")
		}
		if ap, ok := m["additionalProperties"].(bool); !ok || ap {
			w.add(ptr, StrictAdditionalProperties, `"additionalProperties": false missing`)
		}
		required := map[string]bool{}
		if req, ok := m["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					required[s] = true
				}
			}
		}
		props, _ := m["properties"].(map[string]any)
		for _, name := range sortedKeys(props) {
			w.props++
			w.chars += utf8.RuneCountInString(name)
			if !required[name] {
				w.add(join(join(ptr, "properties"), name), StrictRequired, "property "+strconv.Quote(name)+" not in required")
			}
		}
	}
	for _, kw := range sortedKeys(m) {
		at := join(ptr, kw)
		if !strictKeywords[kw] {
			w.add(at, StrictKeyword, kw)
			continue
		}
		switch val := m[kw]; kw {
		case "properties":
			props, _ := val.(map[string]any)
			for _, name := range sortedKeys(props) {
				w.node(props[name], join(at, name), depth)
			}
		case "$defs", "definitions":
			defs, _ := val.(map[string]any)
			for _, name := range sortedKeys(defs) {
				w.chars += utf8.RuneCountInString(name)
				w.node(defs[name], join(at, name), 0)
			}
		case "items":
			w.node(val, at, depth)
		case "anyOf":
			list, _ := val.([]any)
			for i, sub := range list {
				w.node(sub, join(at, strconv.Itoa(i)), depth)
			}
		case "additionalProperties":
			if sub, ok := val.(map[string]any); ok {
				w.node(sub, at, depth)
			}
		case "enum":
			list, _ := val.([]any)
			w.enums += len(list)
			strs, total := 0, 0
			for _, e := range list {
				if s, ok := e.(string); ok {
					strs++
					total += utf8.RuneCountInString(s)
				}
			}
			w.chars += total
			if strs > strictBigEnum && total > strictMaxBigEnumChars {
				w.add(at, StrictEnumLength, strconv.Itoa(strs)+" strings, "+strconv.Itoa(total)+" characters, limit 15000")
			}
		case "const":
			if s, ok := val.(string); ok {
				w.chars += utf8.RuneCountInString(s)
			}
		case "format":
			if f, _ := val.(string); !strictFormats[f] {
				w.add(at, StrictFormat, f)
			}
		case "$ref":
			if r, _ := val.(string); !strings.HasPrefix(r, "#") {
				w.add(at, StrictRef, "only references within the schema")
			}
		}
	}
}
