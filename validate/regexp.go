package validate

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

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
	return slices.ContainsFunc(unsupported[se.Code], func(start string) bool { return strings.HasPrefix(se.Expr, start) })
}

// unsupported lists, per RE2 error code, how the expressions start that it
// refuses and ECMA-262 allows: lookahead, lookbehind, backreferences.
var unsupported = map[syntax.ErrorCode][]string{
	syntax.ErrInvalidPerlOp:       {"(?=", "(?!"},
	syntax.ErrInvalidNamedCapture: {"(?<=", "(?<!"},
	syntax.ErrInvalidEscape:       {`\1`, `\2`, `\3`, `\4`, `\5`, `\6`, `\7`, `\8`, `\9`, `\k`},
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
		class = ecmaClass(s, i, class)
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		out, n := ecmaRewrite(s[i:], class >= 0)
		b.WriteString(out)
		i += n - 1
	}
	return b.String()
}

// ecmaClass returns the index of the "[" that opens the character class
// s[i] is in, or -1 outside one, given the same, class, for s[i-1]. A "]"
// right after "[" or "[^" is a literal.
func ecmaClass(s string, i, class int) int {
	switch c := s[i]; {
	case c == '[' && class < 0:
		return i
	case c == ']' && class >= 0 && strings.TrimPrefix(s[class+1:i], "^") != "":
		return -1
	}
	return class
}

// ecmaRewrite returns RE2's text for the escape at the start of s (inClass:
// inside a character class) and the escape's length; an escape that is not
// one of ours is kept with its character.
func ecmaRewrite(s string, inClass bool) (string, int) {
	if out, ok := ecmaSpaces[spaceEscape{s[1], inClass}]; ok {
		return out, 2
	}
	if r, n := ecmaEscape(s); n > 0 {
		return `\x{` + strconv.FormatInt(int64(r), 16) + "}", n
	}
	return s[:2], 2
}

// spaceEscape is a \s or \S escape's letter, and whether it is in a class.
type spaceEscape struct {
	letter  byte
	inClass bool
}

// ecmaSpaces is RE2's text for ECMA-262's \s, and for \S outside a class
// (RE2's own \S in one reads as its ASCII complement, which is kept).
var ecmaSpaces = map[spaceEscape]string{
	{'s', true}:  ecmaSpace,
	{'s', false}: "[" + ecmaSpace + "]",
	{'S', false}: "[^" + ecmaSpace + "]",
}

// ecmaEscape reads the escape at the start of s (which starts with a
// backslash): a \uXXXX (a high surrogate followed by a low one joins
// them), \u{X...} or \cX, returning the code point and the escape's
// length, or 0, 0.
func ecmaEscape(s string) (rune, int) {
	switch {
	case s[1] == 'c':
		return ecmaControl(s)
	case strings.HasPrefix(s[1:], "u{"):
		return ecmaCodePoint(s)
	case s[1] == 'u':
		return ecmaUTF16(s)
	}
	return 0, 0
}

// ecmaControl reads \cX, X a letter, at the start of s: X's control character.
func ecmaControl(s string) (rune, int) {
	if len(s) > 2 && 'a' <= s[2]|0x20 && s[2]|0x20 <= 'z' {
		return rune(s[2] % 32), 3
	}
	return 0, 0
}

// ecmaCodePoint reads \u{X...} at the start of s: a code point up to U+10FFFF.
func ecmaCodePoint(s string) (rune, int) {
	end := strings.IndexByte(s, '}')
	if r, err := strconv.ParseUint(s[3:max(end, 3)], 16, 32); end > 3 && err == nil && r <= 0x10FFFF {
		return rune(r), end + 1
	}
	return 0, 0
}

// ecmaUTF16 reads \uXXXX at the start of s, joined with a \uXXXX after it
// when they are a surrogate pair.
func ecmaUTF16(s string) (rune, int) {
	hi, ok := hex4(s[2:])
	if !ok {
		return 0, 0
	}
	lo, ok := hex4(s[min(8, len(s)):]) // ok: s holds 12 bytes or more
	if r := utf16.DecodeRune(hi, lo); ok && s[6:8] == `\u` && r != utf8.RuneError {
		return r, 12 // a surrogate pair; DecodeRune returns U+FFFD for any other
	}
	return hi, 6
}

// hex4 reads four hexadecimal digits at the start of s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	r, err := strconv.ParseUint(s[:4], 16, 32)
	return rune(r), err == nil
}
