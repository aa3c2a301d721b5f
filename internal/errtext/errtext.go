// Package errtext holds the rule by which Portico's error messages say
// each thing once: a message is parts separated by ": " or "; ", and a part
// is said when its words already appear, side by side, in what came
// before. portico.Error's text leaves out what is said already, and
// modeltest.Repeated finds what a message says twice.
package errtext

import (
	"strings"
	"unicode"
)

// Part is one part of a message and the separator before it ("" for the
// first).
type Part struct {
	Sep, Text string
}

// Parts splits msg at each ": " and "; ".
func Parts(msg string) []Part {
	var parts []Part
	sep := ""
	for i := nextSep(msg); i >= 0; i = nextSep(msg) {
		parts = append(parts, Part{Sep: sep, Text: msg[:i]})
		sep, msg = msg[i:i+2], msg[i+2:]
	}
	return append(parts, Part{Sep: sep, Text: msg})
}

// nextSep returns the index of msg's first ": " or "; ", or -1.
func nextSep(msg string) int {
	i, j := strings.Index(msg, ": "), strings.Index(msg, "; ")
	if i < 0 || 0 <= j && j < i {
		return j
	}
	return i
}

// IsName reports whether s is one lower-case identifier: a part that
// only names a package when ": " follows it ("ratelimit: ").
func IsName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
}

// Said reports whether the words of part appear in text, in order and side
// by side. Words are runs of letters and digits, compared without case
// ("rate_limited" is "rate limited"); a part without words is never said.
func Said(text, part string) bool {
	p := words(part)
	return len(p) > 0 && strings.Contains(" "+strings.Join(words(text), " ")+" ", " "+strings.Join(p, " ")+" ")
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Repeated returns the first part of msg that says again what msg said
// before it, "" when none does. A part that only names a package (see
// IsName) is never one.
func Repeated(msg string) string {
	parts := Parts(msg)
	var before strings.Builder
	for i, p := range parts {
		name := i+1 < len(parts) && parts[i+1].Sep == ": " && IsName(p.Text)
		if !name && Said(before.String(), p.Text) {
			return p.Text
		}
		before.WriteString(p.Sep)
		before.WriteString(p.Text)
	}
	return ""
}
