package openai

import (
	"net/http"
	"strings"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// ParseRetryAfter returns the provider's wait hint from the response headers,
// in order of precedence:
//
//   - retry-after-ms: milliseconds, a non-negative decimal number (OpenAI's
//     header; fractions allowed);
//   - retry-after: delay-seconds, a non-negative decimal number (RFC 9110
//     section 10.2.3 allows only integers; fractions are accepted as
//     OpenAI-compatible servers send them), or an HTTP-date, taken relative
//     to now (a date in the past means 0).
//
// ok is false when neither header holds a valid value; a malformed
// retry-after-ms falls through to retry-after. Hints above 24 hours are
// clamped to 24 hours. ParseRetryAfter is pure: it reads no clock, so the
// caller passes now (time.Now()).
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := h.Get("retry-after-ms"); v != "" {
		if d, ok := adapt.Number(v, time.Millisecond); ok {
			return d, true
		}
	}
	return adapt.RetryAfter(h.Get("retry-after"), now)
}

// ParseReset parses the value of an x-ratelimit-reset-requests or
// x-ratelimit-reset-tokens header: Go-style duration text as OpenAI sends it
// ("1s", "6m0s", "20ms", "1h2m3.5s", "17.28s"), or a bare non-negative number
// of seconds as some compatible servers send. ok is false for anything else,
// including negative durations. Values above 24 hours are clamped to 24 hours.
func ParseReset(v string) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, ok := adapt.Number(v, time.Second); ok {
		return d, true
	}
	if v[0] == '-' || v[0] == '+' {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, false
	}
	return min(d, adapt.MaxHint), true
}

// ParseRateLimit reads OpenAI's rate-limit headers (x-ratelimit-limit-*,
// x-ratelimit-remaining-*, x-ratelimit-reset-* for requests and tokens) into a
// [portico.RateLimit]. A quota is Known when its remaining header is a valid
// non-negative integer; its limit and reset are filled when valid. It returns
// nil when no quota is known.
func ParseRateLimit(h http.Header) *portico.RateLimit {
	rl := portico.RateLimit{
		Requests: adapt.Quota(h, "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Limit-Requests", "X-Ratelimit-Reset-Requests", ParseReset),
		Tokens:   adapt.Quota(h, "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Reset-Tokens", ParseReset),
	}
	if !rl.Requests.Known && !rl.Tokens.Known {
		return nil
	}
	return &rl
}
