package adapt

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/portico-llm/portico"
)

// MaxHint bounds every parsed wait: longer hints are clamped to it, so that
// arithmetic on them never overflows a time.Duration. One day is far beyond
// any provider's real hint.
const MaxHint = 24 * time.Hour

// RetryAfter parses a Retry-After value: delay-seconds, a non-negative
// decimal number (RFC 9110 section 10.2.3 allows only integers; fractions
// are accepted, as OpenAI-compatible servers send them), or an HTTP-date
// taken relative to now (a date in the past means 0). ok is false for an
// empty or invalid value. Hints are clamped to MaxHint. It is pure.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, ok := Number(v, time.Second); ok {
		return d, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return Until(t, now), true
}

// Number parses a non-negative decimal number of units, clamped to MaxHint;
// ok is false for anything else (signs, NaN, Inf, hex and exponents are
// refused). Surrounding white space is ignored.
func Number(v string, unit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	dot := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && !dot && i > 0:
			dot = true
		default:
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f*float64(unit) >= float64(MaxHint) {
		return MaxHint, true
	}
	return time.Duration(f * float64(unit)), true
}

// Until is t - now, within [0, MaxHint].
func Until(t, now time.Time) time.Duration {
	d := t.Sub(now)
	switch {
	case d < 0:
		return 0
	case d > MaxHint:
		return MaxHint
	}
	return d
}

// Header returns h's first value for the canonical key k, or "", without
// canonicalizing k (and allocating) as http.Header.Get does.
func Header(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Quota reads one quota from a provider's rate-limit headers, named in
// canonical form: Known when the remaining header is a non-negative
// integer, with the limit and the reset (read by parseReset) when valid.
func Quota(h http.Header, remaining, limit, reset string, parseReset func(string) (time.Duration, bool)) portico.Quota {
	var q portico.Quota
	rem, ok := count(Header(h, remaining))
	if !ok {
		return q
	}
	q.Known, q.Remaining = true, rem
	if lim, ok := count(Header(h, limit)); ok {
		q.Limit = lim
	}
	if v := Header(h, reset); v != "" {
		q.Reset, _ = parseReset(v)
	}
	return q
}

// count parses a non-negative integer; an absent header ("") is not one,
// without the allocation of strconv's error.
func count(v string) (int, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 0
}
