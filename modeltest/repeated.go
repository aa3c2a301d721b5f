package modeltest

import "github.com/portico-llm/portico/internal/errtext"

// Repeated returns the first part of err's message that says again what
// the message said before it, or "" when none does: the rule by which
// Portico's error messages say each thing once. A message is parts
// separated by ": " and "; " ("portico: rejected model m: overloaded"); a
// part repeats when its words (runs of letters and digits, without case,
// "rate_limited" reading "rate limited") appear side by side before it, as
// "overloaded" does in "overloaded: ratelimit: overloaded". A part that
// only names a package ("ratelimit" before ": ") is never a repetition.
// Check every error a layer makes with it.
func Repeated(err error) string {
	if err == nil {
		return ""
	}
	return errtext.Repeated(err.Error())
}
