package validate

import (
	"strconv"
	"strings"
)

// scan checks s against l in one pass over its bytes, before s is decoded: the
// decoder and the schema validator are then never handed a document whose
// nesting or numbers could cost unbounded time or memory (jsonschema compares
// numbers as math/big.Rat, and 1e1000000 costs tens of milliseconds per
// occurrence). It returns "" when s is
// within the limits, else the broken rule and a content-free detail. scan
// assumes nothing about s's validity: malformed JSON is left to the decoder.
func (l *Limits) scan(s string) (rule, detail string) {
	if len(s) > l.MaxBytes {
		return RuleMaxBytes, strconv.Itoa(len(s)) + " bytes"
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			i = skipString(s, i+1)
		case '[', '{':
			depth++
			if depth > l.MaxDepth {
				return RuleMaxDepth, "offset " + strconv.Itoa(i)
			}
		case ']', '}':
			depth--
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			end, fits := l.number(s, i)
			if !fits {
				return RuleMaxNumber, "offset " + strconv.Itoa(i)
			}
			i = end - 1
		}
	}
	return "", ""
}

// number returns the end of the number-like run starting at i, and whether
// it is within the limits of its length and exponent.
func (l *Limits) number(s string, i int) (end int, fits bool) {
	end, exp := scanNumber(s, i)
	return end, end-i <= l.MaxNumberLength && exp <= l.MaxExponent
}

// skipString returns the index of the quote closing the string whose content
// starts at i, or len(s) when it is not closed.
func skipString(s string, i int) int {
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		j += i
		// The quote is escaped when an odd number of backslashes precede it.
		if backslashes := j - i - len(strings.TrimRight(s[i:j], `\`)); backslashes%2 == 0 {
			return j
		}
		i = j + 1
	}
}

// scanNumber returns the end of the number-like run starting at i and the
// magnitude of its exponent (saturated at 1<<30).
func scanNumber(s string, i int) (end, exp int) {
	j := len(s) - len(strings.TrimLeft(s[i:], "0123456789+-."))
	if j < len(s) && s[j]|0x20 == 'e' { // e or E
		return scanExponent(s, j+1)
	}
	return j, 0
}

// scanExponent returns the end of the signed exponent starting at i and its
// magnitude (saturated at 1<<30).
func scanExponent(s string, i int) (end, exp int) {
	if strings.HasPrefix(s[i:], "+") || strings.HasPrefix(s[i:], "-") {
		i++
	}
	end = len(s) - len(strings.TrimLeft(s[i:], "0123456789"))
	for _, c := range []byte(s[i:end]) {
		if exp < 1<<30 {
			exp = exp*10 + int(c-'0')
		}
	}
	return end, exp
}
