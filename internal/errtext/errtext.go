// Package errtext holds the rule by which Portico's error messages say
// each thing once: a message is parts separated by ": " or "; ", and a part
// is said when its words already appear, side by side, in what came
// before. portico.Error's text leaves out what is said already, and
// modeltest.Repeated finds what a message says twice.
package errtext

import (
	"slices"
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
	for {
		i := strings.Index(msg, ": ")
		if j := strings.Index(msg, "; "); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			return append(parts, Part{Sep: sep, Text: msg})
		}
		parts = append(parts, Part{Sep: sep, Text: msg[:i]})
		sep, msg = msg[i:i+2], msg[i+2:]
	}
}

// IsName reports whether s is one lower-case identifier: a part that
// only names a package when ": " follows it ("ratelimit: ").
func IsName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Said reports whether the words of part appear in text, in order and side
// by side. Words are runs of letters and digits, compared without case
// ("rate_limited" is "rate limited"); a part without words is never said.
func Said(text, part string) bool {
	p := words(part)
	if len(p) == 0 {
		return false
	}
	t := words(text)
	for i := 0; i+len(p) <= len(t); i++ {
		if slices.Equal(t[i:i+len(p)], p) {
			return true
		}
	}
	return false
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
