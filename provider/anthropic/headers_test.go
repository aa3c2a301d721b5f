package anthropic_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/anthropic"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{" 3 ", 3 * time.Second, true},
		{"0.25", 250 * time.Millisecond, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1e3", 0, false},
		{"NaN", 0, false},
		{".5", 0, false},
		{"0x10", 0, false},
		{"99999999999999999999", 24 * time.Hour, true},
		{"Sun, 29 Nov 2026 12:00:10 GMT", 10 * time.Second, true},
		{"Sunday, 29-Nov-26 12:01:00 GMT", time.Minute, true},
		{"Sun Nov 29 12:00:05 2026", 5 * time.Second, true},
		{"Sun, 29 Nov 2026 11:59:00 GMT", 0, true},
		{"Sun, 06 Dec 2026 12:00:00 GMT", 24 * time.Hour, true},
		{"tomorrow", 0, false},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.in != "" {
			h.Set("retry-after", c.in)
		}
		got, ok := anthropic.ParseRetryAfter(h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v, want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseReset(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2026-11-29T12:00:30Z", 30 * time.Second, true},
		{"2026-11-29T12:00:00.5Z", 500 * time.Millisecond, true},
		{"2026-11-29T13:00:30+01:00", 30 * time.Second, true},
		{" 2026-11-29T12:01:00Z ", time.Minute, true},
		{"2026-11-29T11:00:00Z", 0, true},
		{"2026-12-31T00:00:00Z", 24 * time.Hour, true},
		{"", 0, false},
		{"30", 0, false},
		{"1s", 0, false},
		{"2026-11-29 12:00:30", 0, false},
		{"Sun, 29 Nov 2026 12:00:10 GMT", 0, false},
	}
	for _, c := range cases {
		got, ok := anthropic.ParseReset(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseReset(%q) = %v, %v, want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseRateLimit(t *testing.T) {
	h := http.Header{}
	if got := anthropic.ParseRateLimit(h, now); got != nil {
		t.Errorf("ParseRateLimit(no headers) = %+v, want nil", got)
	}
	// The headers of a real answer (limits per minute).
	for k, v := range map[string]string{
		"anthropic-ratelimit-requests-limit":          "1000",
		"anthropic-ratelimit-requests-remaining":      "999",
		"anthropic-ratelimit-requests-reset":          "2026-11-29T12:00:01Z",
		"anthropic-ratelimit-tokens-limit":            "96000",
		"anthropic-ratelimit-tokens-remaining":        "95000",
		"anthropic-ratelimit-tokens-reset":            "2026-11-29T12:00:02Z",
		"anthropic-ratelimit-input-tokens-limit":      "80000",
		"anthropic-ratelimit-input-tokens-remaining":  "79000",
		"anthropic-ratelimit-input-tokens-reset":      "2026-11-29T12:00:03Z",
		"anthropic-ratelimit-output-tokens-limit":     "16000",
		"anthropic-ratelimit-output-tokens-remaining": "16000",
		"anthropic-ratelimit-output-tokens-reset":     "2026-11-29T12:00:00Z",
	} {
		h.Set(k, v)
	}
	want := portico.RateLimit{
		Requests:     portico.Quota{Known: true, Limit: 1000, Remaining: 999, Reset: time.Second},
		Tokens:       portico.Quota{Known: true, Limit: 96000, Remaining: 95000, Reset: 2 * time.Second},
		InputTokens:  portico.Quota{Known: true, Limit: 80000, Remaining: 79000, Reset: 3 * time.Second},
		OutputTokens: portico.Quota{Known: true, Limit: 16000, Remaining: 16000},
	}
	if got := anthropic.ParseRateLimit(h, now); got == nil || *got != want {
		t.Errorf("ParseRateLimit = %+v, want %+v", got, want)
	}
	h.Set("anthropic-ratelimit-output-tokens-remaining", "-3")
	h.Set("anthropic-ratelimit-requests-reset", "later")
	h.Set("anthropic-ratelimit-tokens-limit", "lots")
	want.OutputTokens = portico.Quota{}
	want.Requests.Reset = 0
	want.Tokens.Limit = 0
	if got := anthropic.ParseRateLimit(h, now); got == nil || *got != want {
		t.Errorf("ParseRateLimit(bad values) = %+v, want %+v", got, want)
	}
	only := http.Header{"Anthropic-Ratelimit-Output-Tokens-Remaining": {"0"}}
	if got := anthropic.ParseRateLimit(only, now); got == nil || *got != (portico.RateLimit{OutputTokens: portico.Quota{Known: true}}) {
		t.Errorf("ParseRateLimit(output remaining only) = %+v, want output known with 0 left", got)
	}
}

// Reading the headers of an answer allocates only the RateLimit itself.
func TestParseRateLimitAllocs(t *testing.T) {
	h := http.Header{}
	h.Set("anthropic-ratelimit-requests-remaining", "999")
	h.Set("anthropic-ratelimit-requests-limit", "1000")
	h.Set("anthropic-ratelimit-input-tokens-reset", "2026-11-29T12:00:03Z")
	h.Set("anthropic-ratelimit-input-tokens-remaining", "5")
	if n := testing.AllocsPerRun(100, func() { anthropic.ParseRateLimit(h, now) }); n != 1 {
		t.Errorf("ParseRateLimit allocates %v times, want 1", n)
	}
	other := http.Header{"Content-Type": {"application/json"}}
	if n := testing.AllocsPerRun(100, func() { anthropic.ParseRateLimit(other, now) }); n != 0 {
		t.Errorf("ParseRateLimit(no quota) allocates %v times, want 0", n)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "3", "1.5", "-1", "Sun, 29 Nov 2026 12:00:10 GMT", "1e9", "99999999999999999999999", ".", "1..2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := anthropic.ParseRetryAfter(http.Header{"Retry-After": {s}}, now)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("ParseRetryAfter(%q) = %v, want within [0, 24h]", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false; want 0 when not ok", s, d)
		}
		if ok && strings.TrimSpace(s) == "" {
			t.Fatalf("ParseRetryAfter(%q) ok, want blank rejected", s)
		}
	})
}

func FuzzParseReset(f *testing.F) {
	for _, s := range []string{"2026-11-29T12:00:30Z", "2026-11-29T12:00:00.5Z", "2026-11-29T13:00:30+01:00", "", "30", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := anthropic.ParseReset(s, now)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("ParseReset(%q) = %v, want within [0, 24h]", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseReset(%q) = %v, false; want 0 when not ok", s, d)
		}
		// What the fake server formats, the parser reads back to the millisecond.
		if ok && d > 0 && d < 24*time.Hour {
			back, ok2 := anthropic.ParseReset(now.Add(d).Format(time.RFC3339Nano), now)
			if !ok2 || back != d {
				t.Fatalf("ParseReset(now+%v) = %v, %v; want it back", d, back, ok2)
			}
		}
	})
}
