package fakegen

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestJSONText(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"n":{"type":"integer","minimum":3},"b":{"type":"boolean"},"e":{"enum":["x","y"]}},"required":["n"]}`, `{"b":true,"e":"x","n":3}`},
		{`{"type":"array","minItems":2,"items":{"const":7}}`, `[7,7]`},
		{`{"anyOf":[{"type":"string","format":"date"},{"type":"null"}]}`, `"2026-01-01"`},
		{`{"type":["null","number"],"exclusiveMinimum":1}`, `2`},
		{`{"allOf":[{"properties":{"a":{"type":"null"}}},{"properties":{"c":{"type":"string","format":"email"}}}]}`, `{"a":null,"c":"lorem@example.com"}`},
		{`not json`, `"sint"`}, // no schema: a word
	} {
		if got := JSONText(json.RawMessage(tc.schema), rand.New(rand.NewPCG(1, 2))); got != tc.want {
			t.Errorf("JSONText(%s) = %s, want %s", tc.schema, got, tc.want)
		}
	}
	// minLength and minItems are capped, whatever the schema asks.
	got := JSONText(json.RawMessage(`{"type":"array","minItems":1e9,"items":{"type":"string","minLength":1e9}}`), rand.New(rand.NewPCG(1, 2)))
	var v []string
	if err := json.Unmarshal([]byte(got), &v); err != nil || len(v) != maxGenerated || len(v[0]) != maxGenerated {
		t.Errorf("JSONText(huge minItems, minLength) = %d items of %d bytes (%v), want %d of %d", len(v), len(v[0]), err, maxGenerated, maxGenerated)
	}
}

func TestPieces(t *testing.T) {
	if got := strings.Join(Pieces(`{"a":"bcdef"}`), "|"); got != `{"a"|:"bc|def"|}` {
		t.Errorf("Pieces = %s, want 4-byte pieces", got)
	}
	if got := Pieces(""); len(got) != 0 {
		t.Errorf("Pieces(\"\") = %q, want none", got)
	}
}

// TestCalls: calls of the tools in turn from the first, wrapping around;
// limit cuts the call that passes it and ends the calls, and a call of
// which nothing fits is not made.
func TestCalls(t *testing.T) {
	schemas := []json.RawMessage{json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`), json.RawMessage(`{"type":"boolean"}`)}
	schema := func(i int) json.RawMessage { return schemas[i] }
	type call struct {
		tool int
		args string
	}
	for _, tc := range []struct {
		first, n, limit int
		want            []call
		tokens          int
		cut             bool
	}{
		{first: 1, n: 3, want: []call{{1, "true"}, {0, `{"a":1}`}, {1, "true"}}, tokens: 4},
		{first: 0, n: 3, limit: 3, want: []call{{0, `{"a":1}`}, {1, "true"}}, tokens: 3, cut: true},
		{first: 0, n: 2, limit: 1, want: []call{{0, `{"a"`}}, tokens: 1, cut: true},
		{first: 1, n: 2, limit: 1, want: []call{{1, "true"}}, tokens: 1, cut: true},
	} {
		var got []call
		tokens, cut := Calls(rand.New(rand.NewPCG(1, 2)), len(schemas), tc.first, tc.n, tc.limit, schema, func(i int, args []string) {
			got = append(got, call{i, strings.Join(args, "")})
		})
		if !reflect.DeepEqual(got, tc.want) || tokens != tc.tokens || cut != tc.cut {
			t.Errorf("Calls(first %d, n %d, limit %d) = %v, %d, %v; want %v, %d, %v", tc.first, tc.n, tc.limit, got, tokens, cut, tc.want, tc.tokens, tc.cut)
		}
	}
}
