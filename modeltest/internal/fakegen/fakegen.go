// Package fakegen generates the answers of modeltest's fake provider
// servers: lorem words for text, and JSON values valid against a request's
// JSON Schema for structured output and tool-call arguments. Every value is
// a function of the schema and the generator passed in, so a fake seeded
// per request answers the same request the same way.
package fakegen

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
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

// Word returns a lorem word drawn from r.
func Word(r *rand.Rand) string { return Lorem[r.IntN(len(Lorem))] }

// Words returns n lorem words drawn from r, each after a space but the
// first unless spaced.
func Words(r *rand.Rand, n int, spaced bool) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = Word(r)
		if i > 0 || spaced {
			out[i] = " " + out[i]
		}
	}
	return out
}

// Length is the length in words of a text answer for a model whose
// OutputTokens is n: n, or 8 when n <= 0.
func Length(n int) int {
	if n > 0 {
		return n
	}
	return 8
}

// Continue returns the pieces that continue prefix in an answer of
// Length(n) words: the rest of the answer base draws (its id first, then
// its words) when prefix is its start (see Rest), else new words from r
// up to Length(n) in all.
func Continue(base *rand.Rand, prefix string, r *rand.Rand, n int) []string {
	n = Length(n)
	base.Uint64() // the answer's id
	if rest, ok := Rest(Words(base, n, false), prefix); ok {
		return rest
	}
	return Words(r, max(0, n-len(strings.Fields(prefix))), true)
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
// keywords: type, properties, required, items, enum, const, minimum, minLength,
// minItems (both capped at 64), anyOf, oneOf, allOf, format. It does not resolve $ref.
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
	if sub, ok := combined(m); ok {
		return generate(sub, r, depth+1)
	}
	return typed(m, r, depth)
}

// combined returns anyOf's or oneOf's first schema, or allOf's schemas
// merged into one (properties merged, any other keyword from the last).
func combined(m map[string]any) (any, bool) {
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return alts[0], true
		}
	}
	all, ok := m["allOf"].([]any)
	if !ok || len(all) == 0 {
		return nil, false
	}
	merged, props := map[string]any{}, map[string]any{}
	for _, a := range all {
		am, _ := a.(map[string]any)
		for k, v := range am {
			if vp, _ := v.(map[string]any); k == "properties" {
				maps.Copy(props, vp)
				v = props
			}
			merged[k] = v
		}
	}
	return merged, true
}

// typed returns a value of the schema's type; a lorem word when it has none.
func typed(m map[string]any, r *rand.Rand, depth int) any {
	switch schemaType(m) {
	case "object":
		props, _ := m["properties"].(map[string]any)
		out := make(map[string]any, len(props))
		for _, k := range slices.Sorted(maps.Keys(props)) {
			out[k] = generate(props[k], r, depth+1)
		}
		return out
	case "array":
		out := make([]any, atLeast(m, "minItems", 1))
		for i := range out {
			out[i] = generate(m["items"], r, depth+1)
		}
		return out
	case "string":
		if f, ok := formats[m["format"]]; ok {
			return f
		}
		w := Word(r)
		return w + strings.Repeat("a", atLeast(m, "minLength", len(w))-len(w))
	case "integer":
		return int64(minimum(m, 1))
	case "number":
		return minimum(m, 1.5)
	case "boolean":
		return true
	case "null":
		return nil
	}
	return Word(r)
}

// formats holds an example of each string format generate knows.
var formats = map[any]string{"date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01",
	"email": "lorem@example.com", "uri": "https://example.com/lorem"}

// schemaType is the schema's type (the first non-null one of a list), or
// object when it has none but has properties.
func schemaType(m map[string]any) string {
	typ, _ := m["type"].(string)
	ts, _ := m["type"].([]any)
	for _, t := range ts {
		if t, _ := t.(string); t != "null" {
			typ = t
			break
		}
	}
	if _, ok := m["properties"]; ok && typ == "" {
		return "object"
	}
	return typ
}

// atLeast returns the schema's minimum k capped at maxGenerated, if over n.
func atLeast(m map[string]any, k string, n int) int {
	if v, ok := m[k].(float64); ok && v > float64(n) {
		return int(min(v, maxGenerated))
	}
	return n
}

// minimum returns the schema's minimum, exclusiveMinimum+1, or else def.
func minimum(m map[string]any, def float64) float64 {
	if v, ok := m["minimum"].(float64); ok {
		return v
	}
	if v, ok := m["exclusiveMinimum"].(float64); ok {
		return v + 1
	}
	return def
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

// Vector is text's unit vector of dims float32s (8 when dims <= 0), from
// FNV-1a hashes: the fakes' embeddings, the same for the same text.
func Vector(text string, dims int) []float32 {
	if dims <= 0 {
		dims = 8
	}
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d:%s", i, text)
		v[i] = float32(int64(h.Sum64()>>11)-(1<<52)) / (1 << 52)
		norm += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(norm))
	}
	return v
}

// Calls makes the arguments of n tool calls: of tool first, then the tools
// after it in turn, wrapping around, each valid against schema(i) and
// drawn from r, passed with the tool's index to add as its pieces. When
// the pieces would pass limit (positive; 0 means none), the call that
// passes it is cut there and is the last (none when nothing of it fits):
// the rest is never generated. It returns the pieces made and whether
// limit cut them.
func Calls(r *rand.Rand, tools, first, n, limit int, schema func(i int) json.RawMessage, add func(i int, args []string)) (tokens int, cut bool) {
	for k := range n {
		i := (first + k) % tools
		args := Pieces(JSONText(schema(i), r))
		if limit > 0 && tokens+len(args) > limit {
			args, cut = args[:limit-tokens], true
		}
		if len(args) > 0 || !cut {
			add(i, args)
		}
		tokens += len(args)
		if cut {
			break
		}
	}
	return tokens, cut
}
