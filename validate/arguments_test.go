package validate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
)

const cityParams = `{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}`

// toolsReq declares "weather" (one required argument), "now" (an object
// schema without properties) and "ping" (no Parameters at all).
func toolsReq() *portico.Request {
	return &portico.Request{Tools: []portico.Tool{
		{Name: "weather", Parameters: []byte(cityParams)},
		{Name: "now", Parameters: []byte(`{"type": "object", "properties": {}}`)},
		{Name: "ping"},
	}}
}

func callResp(name, args string) *portico.Response {
	return &portico.Response{FinishReason: portico.FinishToolCalls, Model: "m",
		ToolCalls: []portico.ToolCall{{ID: "1", Name: name, Arguments: json.RawMessage(args)}}}
}

// The same call is accepted in every shape providers send its arguments
// in, and handed on as the object's text; what is wrong in any shape is
// rejected with the same rule.
func TestArgumentShapes(t *testing.T) {
	const paris = `{"city":"Paris"}`
	tests := []struct {
		name, tool, args string
		want             []string // nil: accepted
		out              string   // the arguments handed on
	}{
		{"object", "weather", paris, nil, paris},
		{"white space around", "weather", " \t" + paris + "\r\n", nil, " \t" + paris + "\r\n"},
		{"encoded twice", "weather", `"{\"city\":\"Paris\"}"`, nil, paris},
		{"encoded twice, newline", "weather", `"{\"city\":\"Paris\"}\n"` + "\n", nil, paris + "\n"},
		{"no arguments: empty", "now", ``, nil, `{}`},
		{"no arguments: blank", "now", " \n", nil, `{}`},
		{"no arguments: null", "now", `null`, nil, `{}`},
		{"no arguments: {}", "now", `{}`, nil, `{}`},
		{"no arguments: encoded twice", "now", `"{}"`, nil, `{}`},
		{"no arguments: empty string", "now", `""`, nil, `{}`},
		{"no parameters: empty", "ping", ``, nil, `{}`},
		{"no parameters: object", "ping", `{"x": 1}`, nil, `{"x": 1}`},
		{"wrong type", "weather", `{"city": 1}`, []string{"tools/type@/city"}, ""},
		{"wrong type, encoded twice", "weather", `"{\"city\": 1}"`, []string{"tools/type@/city"}, ""},
		{"missing argument, empty", "weather", ``, []string{"tools/required@/city"}, ""},
		{"a string, not an object", "weather", `"Paris"`, []string{"tools/type@"}, ""},
		{"an array", "weather", `[]`, []string{"tools/type@"}, ""},
		{"trailing data", "weather", paris + `{}`, []string{"tools/json@"}, ""},
		{"cut, encoded twice", "weather", `"{\"city\":"`, []string{"tools/json@"}, ""},
		{"not JSON", "weather", `city=Paris`, []string{"tools/json@"}, ""},
	}
	v := MustNew(Config{})
	for _, tt := range tests {
		inner := callResp(tt.tool, tt.args)
		calls := inner.ToolCalls
		m := v.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return inner, nil }))
		resp, err := m.Generate(context.Background(), toolsReq())
		if tt.want != nil {
			if got := violationRules(rejection(t, err)); !equal(got, tt.want) {
				t.Errorf("%s: %q: violations %q, want %q", tt.name, tt.args, got, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %q: err = %v, want accepted", tt.name, tt.args, err)
			continue
		}
		if got := string(resp.ToolCalls[0].Arguments); got != tt.out {
			t.Errorf("%s: %q: arguments handed on %q, want %q", tt.name, tt.args, got, tt.out)
		}
		if got := string(calls[0].Arguments); got != tt.args {
			// A new slice is handed on: the inner Model's is its own.
			t.Errorf("%s: the inner answer's arguments became %q", tt.name, got)
		}
	}
}

// FuzzArguments feeds arbitrary bytes as a call's arguments. The parser
// never panics; what it accepts is handed on as a JSON object's text
// (within the limits); and an object's text accepted in one shape is
// accepted in the others, handed on as the same object.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{
		``, ` `, `null`, `{}`, `""`, `"{}"`, `{"a": 1}`, `"{\"a\": 1}"`, `"{\"a\":"`,
		`"\"{}\""`, `[]`, `"x"`, `{"a": "\u0000"}`, "{\"a\":1}\n", `{"a": 1}{}`, `nul`,
		`" null "`, strings.Repeat(`{"a":`, 20) + `1` + strings.Repeat(`}`, 20),
	} {
		f.Add(s)
	}
	v := MustNew(Config{Limits: Limits{MaxBytes: 4096, MaxDepth: 16}})
	req := &portico.Request{Tools: []portico.Tool{{Name: "t", Parameters: []byte(`{"type": "object"}`)}}}
	generate := func(args string) (json.RawMessage, error) {
		inner := callResp("t", args)
		m := v.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return inner, nil }))
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			return nil, err
		}
		return resp.ToolCalls[0].Arguments, nil
	}
	f.Fuzz(func(t *testing.T, args string) {
		out, err := generate(args)
		if err != nil {
			if c := portico.ClassOf(err); c != portico.InvalidResponse {
				t.Fatalf("arguments %q: class %v, want InvalidResponse (%v)", args, c, err)
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(out, &obj); err != nil || obj == nil {
			t.Fatalf("arguments %q accepted, handed on as %q: not an object (%v)", args, out, err)
		}
		if rule, _ := v.lim.scan(string(out)); rule != "" {
			t.Fatalf("arguments %q handed on as %q, beyond the limits (%s)", args, out, rule)
		}
		// The object's text in every shape: the same object.
		quoted, _ := json.Marshal(string(out))
		for _, shape := range []string{string(out), " " + string(out) + "\n", string(quoted)} {
			again, err := generate(shape)
			if err != nil {
				t.Fatalf("arguments %q accepted as %q, but its shape %q is refused: %v", args, out, shape, err)
			}
			var o2 map[string]any
			if json.Unmarshal(again, &o2) != nil || !jsonEqual(obj, o2) {
				t.Fatalf("shape %q of %q handed on as %q, want the same object", shape, out, again)
			}
		}
	})
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Reading the shape of a call's arguments allocates nothing: a call costs
// the decode of its arguments and the library's validation, as an answer
// does, in every shape but the ones handed on in a new slice.
func TestArgumentAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	v := MustNew(Config{})
	req := toolsReq()
	resp := callResp("weather", ` {"city": "Paris"}`+"\n")
	p := &pipeline{v: v}
	value, _ := p.decode(string(resp.ToolCalls[0].Arguments))
	sch := v.cache.get(req.Tools[0].Parameters).schema
	if err := v.Check(req, resp); err != nil {
		t.Fatal(err)
	}
	check := testing.AllocsPerRun(50, func() {
		if err := v.Check(req, resp); err != nil {
			t.Fatal(err)
		}
	})
	decode := testing.AllocsPerRun(50, func() { p.decode(string(resp.ToolCalls[0].Arguments)) })
	validate := testing.AllocsPerRun(50, func() {
		if err := sch.Validate(value); err != nil {
			t.Fatal(err)
		}
	})
	if check != decode+validate {
		t.Fatalf("allocs/op: Check of a call %v, want decode %v + validation %v", check, decode, validate)
	}
}
