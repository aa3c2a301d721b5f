package gemini

import (
	"strings"
	"time"

	"github.com/portico-llm/portico/provider/internal/adapt"
)

// ParseRetryDelay parses the retryDelay of a google.rpc.RetryInfo error
// detail, a google.protobuf.Duration in its JSON form: decimal seconds with
// an optional fraction of at most nine digits and the suffix "s" ("37s",
// "58.934310785s", "0.5s"), as the protobuf JSON mapping defines it
// (https://protobuf.dev/programming-guides/json/). ok is false for anything
// else, including negative durations, signs, exponents and white space.
// Delays above 24 hours are clamped to 24 hours. It is pure and does not
// allocate.
func ParseRetryDelay(s string) (d time.Duration, ok bool) {
	num, found := strings.CutSuffix(s, "s")
	if !found || num == "" {
		return 0, false
	}
	whole, frac, dot := strings.Cut(num, ".")
	if whole == "" || dot && (frac == "" || len(frac) > 9) {
		return 0, false
	}
	var secs int64
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if secs <= int64(adapt.MaxHint/time.Second) { // stop growing once past the clamp
			secs = secs*10 + int64(c-'0')
		}
	}
	var nanos int64
	for i := 0; i < 9; i++ {
		nanos *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			nanos += int64(c - '0')
		}
	}
	if secs >= int64(adapt.MaxHint/time.Second) {
		return adapt.MaxHint, true
	}
	return time.Duration(secs)*time.Second + time.Duration(nanos), true
}
