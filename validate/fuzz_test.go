package validate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

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
	v := MustNew(Config{Limits: Limits{MaxBytes: 4096, MaxDepth: 16}, Checks: []Check{func(a *Answer) []Violation { return nil }}})
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
