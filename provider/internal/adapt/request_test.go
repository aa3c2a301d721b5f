package adapt

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/portico-llm/portico"
)

func TestModelName(t *testing.T) {
	for _, c := range []struct {
		name  string
		req   *portico.Request
		def   string
		model string
		class portico.Class
	}{
		{"nil request", nil, "d", "", portico.Permanent},
		{"negative max tokens", &portico.Request{Model: "m", MaxOutputTokens: -1}, "d", "", portico.Permanent},
		{"request's model", &portico.Request{Model: "m"}, "d", "m", portico.OK},
		{"default", &portico.Request{}, "d", "d", portico.OK},
		{"none", &portico.Request{}, "", "", portico.Permanent},
	} {
		model, err := ModelName(c.req, c.def)
		if model != c.model || portico.ClassOf(err) != c.class {
			t.Errorf("%s: ModelName = %q, %v; want %q, %v", c.name, model, err, c.model, c.class)
		}
	}
	if _, err := ModelName(nil, "d"); !errors.Is(err, portico.ErrNilRequest) {
		t.Errorf("ModelName(nil) = %v, want ErrNilRequest", err)
	}
}

func TestMaxBytes(t *testing.T) {
	for _, c := range []struct{ cfg, want int64 }{{0, 64}, {-1, 0}, {10, 10}} {
		if got := MaxBytes(c.cfg, 64); got != c.want {
			t.Errorf("MaxBytes(%d, 64) = %d, want %d", c.cfg, got, c.want)
		}
	}
}

func TestTextOnly(t *testing.T) {
	text := func(s string) portico.Part { return portico.Part{Kind: portico.PartText, Text: s} }
	if got, err := TextOnly([]portico.Part{text("a"), text("b")}); got != "ab" || err != nil {
		t.Errorf("TextOnly(a, b) = %q, %v; want ab", got, err)
	}
	if got, err := TextOnly(nil); got != "" || err != nil {
		t.Errorf("TextOnly(nil) = %q, %v; want empty", got, err)
	}
	if _, err := TextOnly([]portico.Part{text("a"), {Kind: portico.PartImage, ImageURL: "u"}}); err == nil {
		t.Errorf("TextOnly(text, image) = nil error, want one")
	}
	one := []portico.Part{text("only")}
	if n := testing.AllocsPerRun(100, func() { _, _ = TextOnly(one) }); n != 0 {
		t.Errorf("TextOnly of one part allocates %v times, want 0", n)
	}
}

func TestFloat(t *testing.T) {
	for _, c := range []struct {
		v    any
		want float64
		ok   bool
	}{
		{0.5, 0.5, true}, {float32(0.25), 0.25, true}, {3, 3, true}, {int64(-4), -4, true}, {int32(5), 5, true},
		{json.Number("1.5"), 1.5, true}, {json.Number("x"), 0, false}, {"1", 0, false}, {nil, 0, false},
		{math.NaN(), 0, false}, {math.Inf(1), 0, false}, {float32(math.Inf(-1)), 0, false}, {json.Number("1e400"), 0, false},
	} {
		got, ok := Float(c.v)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("Float(%#v) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct {
		v    any
		want []string
		ok   bool
	}{
		{"a", []string{"a"}, true}, {[]string{"a", "b"}, []string{"a", "b"}, true},
		{[]any{"a", "b"}, []string{"a", "b"}, true}, {[]any{"a", 1}, nil, false}, {1, nil, false},
	} {
		got, ok := Strings(c.v)
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("Strings(%#v) = %q, %v; want %q, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

func TestEncodable(t *testing.T) {
	for _, c := range []struct {
		v    any
		want bool
	}{
		{nil, true}, {"s", true}, {true, true}, {3, true}, {0.5, true}, {float32(2), true},
		{json.Number("1.5"), true}, {json.Number("x"), false},
		{json.RawMessage(`{"a":1}`), true}, {json.RawMessage(`{`), false},
		{map[string]any{"a": []any{1, "b", nil}}, true}, {map[string]any{"a": []any{math.NaN()}}, false},
		{math.NaN(), false}, {math.Inf(-1), false}, {float32(math.Inf(1)), false},
		{[]string{"a"}, true}, {make(chan int), false}, {struct{ F float64 }{math.NaN()}, false},
	} {
		if got := Encodable(c.v); got != c.want {
			t.Errorf("Encodable(%#v) = %v, want %v", c.v, got, c.want)
		}
	}
}
