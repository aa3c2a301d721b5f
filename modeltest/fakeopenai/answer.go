package fakeopenai

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// answer is a generated answer, as the pieces (tokens) it is streamed in.
type answer struct {
	id        string
	content   []string // text pieces; nil when the answer is tool calls
	toolCalls []toolCall
	finish    string
	tokens    int // output tokens
}

type toolCall struct {
	id, name string
	args     []string // argument pieces
}

// lorem is the vocabulary of text answers: one word is one token.
var lorem = strings.Fields(`lorem ipsum dolor sit amet consectetur adipiscing elit sed do
eiusmod tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam quis
nostrud exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute
irure in reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint
occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum`)

// textOf returns the text of a message's content: a string, or an array of
// parts whose text parts are joined by spaces.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// countInput counts prompt tokens: words plus 3 per message.
func (c *call) countInput() int {
	n := 0
	for _, m := range c.req.Messages {
		n += 3 + len(strings.Fields(textOf(m.Content)))
	}
	return n
}

// maxOutput is the request's max_completion_tokens, else max_tokens, else 0.
func (c *call) maxOutput() int {
	switch {
	case c.req.MaxCompletionTokens != nil:
		return *c.req.MaxCompletionTokens
	case c.req.MaxTokens != nil:
		return *c.req.MaxTokens
	}
	return 0
}

// rng returns a generator seeded by the server's seed, the model and the
// messages, so that the same request gets the same answer in any order.
func (c *call) rng() *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], c.Server().Seed())
	h.Write(b[:])
	h.Write([]byte(c.req.Model))
	for _, m := range c.req.Messages {
		h.Write([]byte(m.Role))
		h.Write(m.Content)
	}
	sum := h.Sum64()
	return rand.New(rand.NewPCG(sum, sum>>1|1))
}

// wantsTools reports which tool the model calls first, or -1 for none, and
// whether tool_choice named it.
func (c *call) wantsTools() (int, bool) {
	if len(c.req.Tools) == 0 {
		return -1, false
	}
	if n := len(c.req.Messages); n > 0 && c.req.Messages[n-1].Role == "tool" {
		return -1, false
	}
	var choice string
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(c.req.ToolChoice, &choice) != nil && json.Unmarshal(c.req.ToolChoice, &named) == nil && named.Function.Name != "" {
		for i, t := range c.req.Tools {
			if t.Function.Name == named.Function.Name {
				return i, true
			}
		}
	}
	switch {
	case choice == "none":
		return -1, false
	case choice == "required", named.Function.Name != "", c.m.cfg.ToolCalls:
		return 0, named.Function.Name != ""
	}
	return -1, false
}

// maxParallel bounds ModelConfig.ParallelToolCalls, as OpenAI does.
const maxParallel = 128

// answer generates the answer to c.req, cut by max tokens and FaultTruncate.
func (c *call) answer() *answer {
	r := c.rng()
	a := &answer{id: "chatcmpl-" + strconv.FormatUint(r.Uint64(), 36), finish: "stop"}
	limit := c.maxOutput()
	if c.f.Kind == FaultTruncate {
		limit = max(1, c.f.AfterChunks)
	}
	if ti, named := c.wantsTools(); ti >= 0 {
		n := 1
		if p := c.m.cfg.ParallelToolCalls; p > 1 && !named && (c.req.ParallelToolCalls == nil || *c.req.ParallelToolCalls) {
			n = min(p, maxParallel)
		}
		a.finish = "tool_calls"
		for k := range n {
			t := c.req.Tools[(ti+k)%len(c.req.Tools)].Function
			args := pieces(jsonText(t.Parameters, r))
			if limit > 0 && a.tokens+len(args) > limit { // cut here: the rest is never generated
				args = args[:limit-a.tokens]
				a.finish = "length"
				if len(args) == 0 {
					break
				}
			}
			a.toolCalls = append(a.toolCalls, toolCall{id: "call_" + strconv.FormatUint(r.Uint64(), 36), name: t.Name, args: args})
			a.tokens += len(args)
			if a.finish == "length" {
				break
			}
		}
		return a
	}
	if rf := c.req.ResponseFormat; rf != nil && rf.Type == "json_schema" {
		a.content = pieces(jsonText(rf.JSONSchema.Schema, r))
	} else if rf != nil && rf.Type == "json_object" {
		a.content = pieces(`{"answer":"` + lorem[r.IntN(len(lorem))] + `"}`)
	} else {
		n := c.m.cfg.OutputTokens
		if n <= 0 {
			n = 8
		}
		a.content = make([]string, n)
		for i := range a.content {
			w := lorem[r.IntN(len(lorem))]
			if i > 0 {
				w = " " + w
			}
			a.content[i] = w
		}
	}
	a.tokens = len(a.content)
	if limit > 0 && a.tokens > limit {
		a.content, a.tokens, a.finish = a.content[:limit], limit, "length"
	}
	return a
}

// pieces splits s into tokens of at most 4 bytes (s is ASCII).
func pieces(s string) []string {
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

// jsonText returns the JSON text of a value valid against simple schemas.
func jsonText(schema json.RawMessage, r *rand.Rand) string {
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
		w := lorem[r.IntN(len(lorem))]
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
	return lorem[r.IntN(len(lorem))]
}
