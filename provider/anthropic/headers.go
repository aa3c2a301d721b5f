package anthropic

import (
	"net/http"
	"strings"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// ParseRetryAfter returns the provider's wait hint from the retry-after
// header: delay-seconds, a non-negative decimal number (Anthropic sends whole
// seconds; RFC 9110 section 10.2.3 allows only integers, fractions are
// accepted), or an HTTP-date taken relative to now (a date in the past
// means 0). ok is false when the header is absent or invalid. Hints above 24
// hours are clamped to 24 hours. ParseRetryAfter is pure: the caller passes
// now (time.Now()).
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	return adapt.RetryAfter(adapt.Header(h, "Retry-After"), now)
}

// ParseReset parses the value of an anthropic-ratelimit-*-reset header: the
// time at which the quota is full again, in RFC 3339 ("2026-11-29T12:00:30Z",
// fractions of a second allowed), returned relative to now (a time in the past
// means 0, beyond 24 hours is clamped to 24 hours). ok is false for anything
// else. ParseReset is pure.
func ParseReset(v string, now time.Time) (d time.Duration, ok bool) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	if err != nil {
		return 0, false
	}
	return adapt.Until(t, now), true
}

// ParseRateLimit reads Anthropic's rate-limit headers into a
// [portico.RateLimit]: anthropic-ratelimit-requests-*, -tokens-*,
// -input-tokens-* and -output-tokens-* (each -limit, -remaining and -reset)
// into Requests, Tokens, InputTokens and OutputTokens. Anthropic limits input
// and output tokens per minute separately (ITPM, OTPM); the tokens headers
// give the most restrictive limit in effect. A quota is Known when its
// remaining header is a valid non-negative integer; its limit and reset
// (see [ParseReset]) are filled when valid. It returns nil when no quota is
// known. ParseRateLimit is pure: the caller passes now.
func ParseRateLimit(h http.Header, now time.Time) *portico.RateLimit {
	if len(h) == 0 {
		return nil
	}
	var qs [len(quotaHeaders)]portico.Quota
	known := false
	for i := range quotaHeaders {
		names := &quotaHeaders[i]
		qs[i] = adapt.Quota(h, names.remaining, names.limit, names.reset, func(v string) (time.Duration, bool) { return ParseReset(v, now) })
		known = known || qs[i].Known
	}
	if !known {
		return nil
	}
	return &portico.RateLimit{Requests: qs[0], Tokens: qs[1], InputTokens: qs[2], OutputTokens: qs[3]}
}

// quotaNames names one quota's headers, in canonical form, so that lookups
// index the header map without canonicalizing (and allocating).
type quotaNames struct{ remaining, limit, reset string }

// quotaHeaders are the headers of Requests, Tokens, InputTokens and
// OutputTokens, in that order.
var quotaHeaders = [...]quotaNames{
	{"Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Reset"},
	{"Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Reset"},
	{"Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Reset"},
	{"Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Reset"},
}
