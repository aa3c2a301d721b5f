package validate

import (
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// parse decodes s as exactly one JSON value (RFC 8259) within l, in one
// pass that checks the limits as it goes: objects become map[string]any,
// arrays []any, numbers json.Number, as encoding/json's Decoder with
// UseNumber gives them (the decoding jsonschema.UnmarshalJSON uses), and
// with the same replacement of invalid UTF-8 and lone surrogates by U+FFFD.
// FuzzParse checks it against encoding/json on arbitrary input.
//
// It does the work of the limits scan and of the decoder in a single walk,
// and copies nothing it does not have to: a string without escapes and
// every number are slices of s (Go strings are immutable, so sharing is
// safe). It returns "" and the value, or the broken rule (RuleMaxBytes,
// RuleMaxDepth, RuleMaxNumber, RuleJSON) and a content-free detail.
func (l *limits) parse(s string) (v any, rule, detail string) {
	if len(s) > l.maxBytes {
		return nil, RuleMaxBytes, strconv.Itoa(len(s)) + " bytes"
	}
	p := parser{s: s, lim: l}
	p.space()
	if p.i == len(s) {
		return nil, RuleJSON, "no JSON value"
	}
	v = p.value()
	if p.rule == "" {
		p.space()
		if p.i < len(s) {
			return nil, RuleJSON, "trailing data at offset " + strconv.Itoa(p.i)
		}
		return v, "", ""
	}
	return nil, p.rule, p.detail
}

// parser is the state of one parse. After the first failure (rule set)
// every method returns at once.
type parser struct {
	s            string
	i            int
	depth        int
	lim          *limits
	rule, detail string
}

func (p *parser) fail(rule, detail string) {
	if p.rule == "" {
		p.rule, p.detail = rule, detail
	}
}

// syntax fails at the current offset: "unexpected end of JSON" at the end of
// the text, else a syntax error.
func (p *parser) syntax() {
	if p.i >= len(p.s) {
		p.fail(RuleJSON, "unexpected end of JSON")
		return
	}
	p.fail(RuleJSON, "syntax error at offset "+strconv.Itoa(p.i))
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() any {
	if p.i >= len(p.s) {
		p.syntax()
		return nil
	}
	switch c := p.s[p.i]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		s, _ := p.str()
		return s
	case 't':
		return p.literal("true", true)
	case 'f':
		return p.literal("false", false)
	case 'n':
		return p.literal("null", nil)
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return p.number()
		}
	}
	p.syntax()
	return nil
}

func (p *parser) literal(word string, v any) any {
	if len(p.s)-p.i >= len(word) && p.s[p.i:p.i+len(word)] == word {
		p.i += len(word)
		return v
	}
	// Advance over the matching prefix so the error points where it breaks.
	for j := 0; j < len(word) && p.i < len(p.s) && p.s[p.i] == word[j]; j++ {
		p.i++
	}
	p.syntax()
	return nil
}

// enter counts one more level of nesting, failing past MaxDepth.
func (p *parser) enter() bool {
	p.depth++
	if p.depth > p.lim.maxDepth {
		p.fail(RuleMaxDepth, "offset "+strconv.Itoa(p.i))
		return false
	}
	return true
}

func (p *parser) object() any {
	if !p.enter() {
		return nil
	}
	p.i++ // '{'
	m := make(map[string]any)
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		return m
	}
	for p.rule == "" {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			p.syntax()
			return nil
		}
		k, ok := p.str()
		if !ok {
			return nil
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			p.syntax()
			return nil
		}
		p.i++
		p.space()
		v := p.value()
		if p.rule != "" {
			return nil
		}
		m[k] = v // a repeated key keeps its last value, as encoding/json does
		p.space()
		if p.i < len(p.s) {
			switch p.s[p.i] {
			case ',':
				p.i++
				p.space()
				continue
			case '}':
				p.i++
				p.depth--
				return m
			}
		}
		p.syntax()
	}
	return nil
}

func (p *parser) array() any {
	if !p.enter() {
		return nil
	}
	p.i++ // '['
	a := make([]any, 0)
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		return a
	}
	for p.rule == "" {
		v := p.value()
		if p.rule != "" {
			return nil
		}
		a = append(a, v)
		p.space()
		if p.i < len(p.s) {
			switch p.s[p.i] {
			case ',':
				p.i++
				p.space()
				continue
			case ']':
				p.i++
				p.depth--
				return a
			}
		}
		p.syntax()
	}
	return nil
}

// number reads a number by RFC 8259's grammar,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, failing past
// MaxNumberLength characters or an exponent beyond MaxExponent.
func (p *parser) number() any {
	s, start := p.s, p.i
	i := p.i
	if s[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		p.i = i
		p.syntax()
		return nil
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			p.i = i
			p.syntax()
			return nil
		}
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		if !digits() {
			p.i = i
			p.syntax()
			return nil
		}
		for ; j < i; j++ {
			if exp < 1<<30 {
				exp = exp*10 + int(s[j]-'0')
			}
		}
	}
	if i-start > p.lim.maxNumber || exp > p.lim.maxExponent {
		p.fail(RuleMaxNumber, "offset "+strconv.Itoa(start))
		return nil
	}
	p.i = i
	return json.Number(s[start:i])
}

// str reads the string whose opening quote is at p.i. Without escapes and
// with valid UTF-8 it is a slice of the text; otherwise it is unquoted as
// encoding/json does.
func (p *parser) str() (string, bool) {
	s := p.s
	start := p.i + 1
	plain := true
	for i := start; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			p.i = i + 1
			if plain {
				return s[start:i], true
			}
			return unquote(s[start:i]), true
		case c == '\\':
			plain = false
			i++
			if i >= len(s) {
				p.i = i
				p.syntax()
				return "", false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 0; k < 4; k++ {
					i++
					if i >= len(s) || !isHex(s[i]) {
						p.i = i
						p.syntax()
						return "", false
					}
				}
			default:
				p.i = i
				p.syntax()
				return "", false
			}
		case c < 0x20:
			p.i = i
			p.syntax()
			return "", false
		case c >= utf8.RuneSelf:
			if plain {
				// Check the rune here, so that valid UTF-8 stays on the
				// plain path.
				r, size := utf8.DecodeRuneInString(s[i:])
				if r == utf8.RuneError && size == 1 {
					plain = false
				} else {
					i += size - 1
				}
			}
		}
	}
	p.i = len(s)
	p.syntax()
	return "", false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// unquote decodes the content of a JSON string already checked by str:
// escapes, surrogate pairs, and invalid UTF-8 or lone surrogates replaced
// by U+FFFD, as encoding/json's unquote does.
func unquote(s string) string {
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			i++
			switch s[i] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := getu4(s[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if d := utf16.DecodeRune(r, getu4(s[i+2:])); d != unicode.ReplacementChar {
							b = utf8.AppendRune(b, d)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
				continue
			default: // '"', '\\', '/'
				b = append(b, s[i])
			}
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, unicode.ReplacementChar)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
	}
	return string(b)
}

// getu4 decodes the four hex digits at the start of s (checked by str).
func getu4(s string) rune {
	var r rune
	for k := 0; k < 4; k++ {
		c := s[k]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
