// Package fakegen generates the answers of modeltest's fake provider
// servers: lorem words for text, and JSON values valid against a request's
// JSON Schema for structured output and tool-call arguments. Every value is
// a function of the schema and the generator passed in, so a fake seeded
// per request answers the same request the same way.
package fakegen

import (
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strings"
)

// Lorem is the vocabulary of text answers: one word is one token.
var Lorem = strings.Fields(`lorem ipsum dolor sit amet consectetur adipiscing elit sed do
eiusmod tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam quis
nostrud exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute
irure in reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint
occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum`)

// Pieces splits s into tokens of at most 4 bytes (s is ASCII).
func Pieces(s string) []string {
	out := make([]string, 0, len(s)/4+1)
	for len(s) > 4 {
		out = append(out, s[:4])
		s = s[4:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// JSONText returns the JSON text of a value valid against simple schemas.
func JSONText(schema json.RawMessage, r *rand.Rand) string {
	var sc any
	if json.Unmarshal(schema, &sc) != nil {
		sc = map[string]any{}
	}
	b, _ := json.Marshal(generate(sc, r, 0))
	return string(b)
}

// maxGenerated bounds minItems and minLength, so that a hostile schema cannot
// make the server allocate without limit.
const maxGenerated = 64

// generate returns a value valid against the JSON Schema s for the common
// keywords: type, properties, required, items, enum, const, minimum,
// minLength, minItems (both capped at 64), anyOf, oneOf, allOf, format (date-time, date, email,
// uri). It does not resolve $ref.
func generate(s any, r *rand.Rand, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > 8 {
		return nil
	}
	if v, ok := m["const"]; ok {
		return v
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return generate(alts[0], r, depth+1)
		}
	}
	if all, ok := m["allOf"].([]any); ok && len(all) > 0 {
		merged := map[string]any{}
		for _, a := range all {
			am, ok := a.(map[string]any)
			if !ok {
				continue
			}
			for k, v := range am {
				if k == "properties" { // merge the property sets
					props, _ := merged[k].(map[string]any)
					if props == nil {
						props = map[string]any{}
					}
					if vp, ok := v.(map[string]any); ok {
						for pk, pv := range vp {
							props[pk] = pv
						}
					}
					merged[k] = props
					continue
				}
				merged[k] = v
			}
		}
		return generate(merged, r, depth+1)
	}
	typ, _ := m["type"].(string)
	if ts, ok := m["type"].([]any); ok {
		for _, t := range ts {
			if t, _ := t.(string); t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" {
		if _, ok := m["properties"]; ok {
			typ = "object"
		}
	}
	num := func(def float64) float64 {
		if v, ok := m["minimum"].(float64); ok {
			return v
		}
		if v, ok := m["exclusiveMinimum"].(float64); ok {
			return v + 1
		}
		return def
	}
	switch typ {
	case "object":
		props, _ := m["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			out[k] = generate(props[k], r, depth+1)
		}
		return out
	case "array":
		n := 1
		if v, ok := m["minItems"].(float64); ok && v > float64(n) {
			n = int(min(v, maxGenerated))
		}
		out := make([]any, n)
		for i := range out {
			out[i] = generate(m["items"], r, depth+1)
		}
		return out
	case "string":
		switch m["format"] {
		case "date-time":
			return "2026-01-01T00:00:00Z"
		case "date":
			return "2026-01-01"
		case "email":
			return "lorem@example.com"
		case "uri":
			return "https://example.com/lorem"
		}
		w := Lorem[r.IntN(len(Lorem))]
		if v, ok := m["minLength"].(float64); ok {
			if n := int(min(v, maxGenerated)); len(w) < n {
				w += strings.Repeat("a", n-len(w))
			}
		}
		return w
	case "integer":
		return int64(num(1))
	case "number":
		return num(1.5)
	case "boolean":
		return true
	case "null":
		return nil
	}
	return Lorem[r.IntN(len(Lorem))]
}

// Rest returns the pieces of whole that follow prefix when prefix is the
// start of their text (the last piece it ends inside cut where it ends),
// and whether it is: how a fake model continues its own answer from a
// prefill.
func Rest(whole []string, prefix string) ([]string, bool) {
	done := 0
	for i, p := range whole {
		switch {
		case done == len(prefix):
			return whole[i:], true
		case done+len(p) > len(prefix):
			if !strings.HasPrefix(p, prefix[done:]) {
				return nil, false
			}
			return append([]string{p[len(prefix)-done:]}, whole[i+1:]...), true
		case p != prefix[done:done+len(p)]:
			return nil, false
		}
		done += len(p)
	}
	return nil, done == len(prefix)
}
