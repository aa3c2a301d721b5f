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
	const maxSecs = int64(adapt.MaxHint / time.Second)
	num, found := strings.CutSuffix(s, "s")
	whole, frac, dot := strings.Cut(num, ".")
	if !found || whole == "" || dot && (frac == "" || len(frac) > 9) {
		return 0, false
	}
	secs, wholeOK := digits(whole, maxSecs)
	nanos, fracOK := digits(frac, 1e9)
	if !wholeOK || !fracOK {
		return 0, false
	}
	for range 9 - len(frac) {
		nanos *= 10
	}
	if secs >= maxSecs {
		return adapt.MaxHint, true
	}
	return time.Duration(secs)*time.Second + time.Duration(nanos), true
}

// digits reads s, decimal digits only, as a number that stops growing once
// past limit.
func digits(s string, limit int64) (n int64, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if n <= limit {
			n = n*10 + int64(s[i]-'0')
		}
	}
	return n, true
}
