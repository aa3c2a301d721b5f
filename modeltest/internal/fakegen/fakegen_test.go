package fakegen

import (
	"encoding/json"
	"math/rand/v2"
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
