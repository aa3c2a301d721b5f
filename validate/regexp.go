package validate

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ecmaRegexp is the regular expression engine of compiled schemas
// ("pattern", "patternProperties", and "format": "regex" where format is
// asserted). JSON Schema's patterns are ECMA-262 regular expressions;
// Go's regexp (RE2) reads most of them the same way, and this engine
// closes the gap so that no schema valid for its draft is refused:
//
//   - escapes RE2 lacks are rewritten to its own: \uXXXX (and a
//     surrogate pair of them), \u{X...} and \cX become \x{...}, and \s
//     (\S outside a character class) matches ECMA's white space, Unicode's
//     and U+FEFF, not RE2's ASCII set;
//   - a pattern that needs what RE2 cannot do in linear time, lookaround
//     ((?=, (?!, (?<=, (?<!) or a backreference (\1, \k<name>), matches
//     every string: that keyword is not asserted, rather than the schema
//     refused.
//
// Any other syntax error is the pattern's, and the schema is refused.
func ecmaRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(ecmaEscapes(s))
	if err == nil {
		return re, nil
	}
	var se *syntax.Error
	if errors.As(err, &se) && unsupportedSyntax(se) {
		return anyString(s), nil
	}
	return nil, err
}

// unsupportedSyntax reports whether se is RE2's refusal of valid ECMA-262
// syntax: lookaround or a backreference.
func unsupportedSyntax(se *syntax.Error) bool {
	switch se.Code {
	case syntax.ErrInvalidPerlOp:
		return se.Expr == "(?=" || se.Expr == "(?!"
	case syntax.ErrInvalidNamedCapture:
		return strings.HasPrefix(se.Expr, "(?<=") || strings.HasPrefix(se.Expr, "(?<!")
	case syntax.ErrInvalidEscape:
		return len(se.Expr) == 2 && (se.Expr[1] >= '1' && se.Expr[1] <= '9' || se.Expr[1] == 'k')
	}
	return false
}

// anyString is a pattern RE2 cannot run: it matches every string.
type anyString string

func (anyString) MatchString(string) bool { return true }
func (a anyString) String() string        { return string(a) }

// ecmaSpace is what ECMA-262's \s matches (WhiteSpace and
// LineTerminator), where RE2's matches [\t\n\f\r ] only.
const ecmaSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

// ecmaEscapes rewrites the ECMA-262 escapes RE2 lacks or reads otherwise
// into RE2's: \uXXXX, \u{X...} and \cX into \x{...}, \s and (outside a
// character class) \S into ECMA's white space; every other escape, and
// the text around them, is kept as it is.
func ecmaEscapes(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	class := -1 // the index of the current class's "[", or -1 outside one
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '[' && class < 0:
			class = i
		case c == ']' && class >= 0 && i > class+1 && !(i == class+2 && s[class+1] == '^'):
			class = -1
		}
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case s[i+1] == 's' && class >= 0:
			b.WriteString(ecmaSpace)
			i++
			continue
		case s[i+1] == 's':
			b.WriteString("[" + ecmaSpace + "]")
			i++
			continue
		case s[i+1] == 'S' && class < 0:
			b.WriteString("[^" + ecmaSpace + "]")
			i++
			continue
		}
		r, n := ecmaEscape(s[i:])
		if n == 0 { // not one of ours: keep the escape and its character
			b.WriteString(s[i : i+2])
			i++
			continue
		}
		b.WriteString(`\x{`)
		b.WriteString(strconv.FormatInt(int64(r), 16))
		b.WriteByte('}')
		i += n - 1
	}
	return b.String()
}

// ecmaEscape reads the escape at the start of s (which starts with a
// backslash): a \uXXXX (a high surrogate followed by a low one joins
// them), \u{X...} or \cX, returning the code point and the escape's
// length, or 0, 0.
func ecmaEscape(s string) (rune, int) {
	switch s[1] {
	case 'c':
		if len(s) > 2 && ('a' <= s[2] && s[2] <= 'z' || 'A' <= s[2] && s[2] <= 'Z') {
			return rune(s[2] % 32), 3
		}
	case 'u':
		if len(s) > 2 && s[2] == '{' {
			end := strings.IndexByte(s, '}')
			if end > 3 {
				if r, err := strconv.ParseUint(s[3:end], 16, 32); err == nil && r <= 0x10FFFF {
					return rune(r), end + 1
				}
			}
			return 0, 0
		}
		hi, ok := hex4(s[2:])
		if !ok {
			return 0, 0
		}
		if 0xD800 <= hi && hi < 0xDC00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if lo, ok := hex4(s[8:]); ok && 0xDC00 <= lo && lo < 0xE000 {
				return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), 12
			}
		}
		return hi, 6
	}
	return 0, 0
}

// hex4 reads four hexadecimal digits at the start of s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	r, err := strconv.ParseUint(s[:4], 16, 32)
	return rune(r), err == nil
}
