package validate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A pattern valid in ECMA-262 never gets its schema refused: escapes RE2
// lacks are rewritten to its own, and lookaround and backreferences, which
// RE2 cannot run, leave the keyword unasserted. A pattern that is not a
// regular expression in either is the schema's fault.
func TestECMAPatterns(t *testing.T) {
	tests := []struct {
		pattern, answer string
		valid           bool
	}{
		{`^[\u0041-\u005A]+$`, `"ABC"`, true},
		{`^[\u0041-\u005A]+$`, `"abc"`, false},
		{`^\u00e9t\u00e9$`, `"été"`, true},
		{`^\uD83D\uDE00$`, `"😀"`, true},
		{`^\u{1F600}$`, `"😀"`, true},
		{`^\u{1F600}$`, `"x"`, false},
		{`^\cJ$`, `"\n"`, true},
		{`^\\u0041$`, `"\\u0041"`, true},   // an escaped backslash, then text
		{`^(?!admin$).+`, `"admin"`, true}, // lookahead: not asserted
		{`^(?=.*\d).+$`, `"abc"`, true},
		{`(?<=a)b`, `"cb"`, true},
		{`(?<!a)b`, `"ab"`, true},
		{`^(a)\1$`, `"ab"`, true}, // backreference: not asserted
		{`^(?<x>a)\k<x>$`, `"ab"`, true},
		{`^[a-z]+$`, `"abc"`, true},
		{`^[a-z]+$`, `"ABC"`, false},
	}
	v := MustNew(Config{})
	for _, tt := range tests {
		schema := `{"type": "string", "pattern": ` + jsonQuote(tt.pattern) + `}`
		err := v.Check(schemaReq(schema), answer(tt.answer))
		if errors.Is(err, ErrSchema) || (err == nil) != tt.valid {
			t.Errorf("pattern %s, answer %s: Check = %v, want valid %v", tt.pattern, tt.answer, err, tt.valid)
		}
	}
	for _, bad := range []string{`^(abc$`, `[z-a]`, `a**`} {
		if err := v.Prepare(schemaReq(`{"type": "string", "pattern": ` + jsonQuote(bad) + `}`)); !errors.Is(err, ErrSchema) {
			t.Errorf("pattern %s: Prepare = %v, want ErrSchema", bad, err)
		}
	}
	// patternProperties and, asserted, format "regex" read patterns alike.
	pp := `{"type": "object", "patternProperties": {"^\\u0061": {"type": "integer"}}}`
	if err := v.Check(schemaReq(pp), answer(`{"ab": "x"}`)); err == nil {
		t.Errorf("patternProperties ^\\u0061: {\"ab\": \"x\"} accepted, want rejected")
	}
	asserted := MustNew(Config{AssertFormat: true})
	re := `{"type": "string", "format": "regex"}`
	for text, valid := range map[string]bool{`"(?!x)y"`: true, `"\\u0041"`: true, `"(abc"`: false} {
		if err := asserted.Check(schemaReq(re), answer(text)); (err == nil) != valid {
			t.Errorf("format regex %s: Check = %v, want valid %v", text, err, valid)
		}
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// FuzzECMARegexp feeds arbitrary patterns to the engine: it never panics,
// leaves a pattern without escapes as it is, and either compiles a
// pattern or refuses it with an error.
func FuzzECMARegexp(f *testing.F) {
	for _, s := range []string{`^[\u0041-\u005A]+$`, `\uD83D\uDE00`, `\u{1F600}`, `\u{`, `\u{110000}`, `\cJ`, `\c`,
		`[\s\S]`, `[^\s]`, `\S+`, `[]\s]`, `[^]\s]`, `(?!a)`, `(?<=a)`, `\1`, `\k<x>`, `\`, `[`, `\\u0041`, `\uD83D`, `\uD83D\u0041`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.ContainsRune(s, '\\') && ecmaEscapes(s) != s {
			t.Fatalf("ecmaEscapes(%q) = %q, want it unchanged", s, ecmaEscapes(s))
		}
		re, err := ecmaRegexp(s)
		if (re == nil) == (err == nil) {
			t.Fatalf("ecmaRegexp(%q) = %v, %v: want a Regexp or an error", s, re, err)
		}
		if re != nil {
			re.MatchString(s)
		}
	})
}
