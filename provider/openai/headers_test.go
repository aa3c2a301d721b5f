package openai_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/openai"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	cases := []struct {
		ms, sec string
		want    time.Duration
		ok      bool
	}{
		{"", "", 0, false},
		{"1500", "", 1500 * time.Millisecond, true},
		{"1500", "9", 1500 * time.Millisecond, true}, // ms wins
		{"12.5", "", 12500 * time.Microsecond, true},
		{"0", "", 0, true},
		{"", "3", 3 * time.Second, true},
		{"", " 3 ", 3 * time.Second, true},
		{"", "0.25", 250 * time.Millisecond, true},
		{"", "0", 0, true},
		{"abc", "2", 2 * time.Second, true}, // bad ms falls through
		{"-5", "", 0, false},
		{"", "-1", 0, false},
		{"", "+1", 0, false},
		{"", "1e3", 0, false},
		{"", "NaN", 0, false},
		{"", "Inf", 0, false},
		{"", ".5", 0, false},
		{"", "0x10", 0, false},
		{"", "99999999999999999999", 24 * time.Hour, true}, // clamped
		{"", "Sun, 29 Nov 2026 12:00:10 GMT", 10 * time.Second, true},
		{"", "Sunday, 29-Nov-26 12:01:00 GMT", time.Minute, true}, // RFC 850
		{"", "Sun Nov 29 12:00:05 2026", 5 * time.Second, true},   // asctime
		{"", "Sun, 29 Nov 2026 11:59:00 GMT", 0, true},            // past: 0
		{"", "Sun, 06 Dec 2026 12:00:00 GMT", 24 * time.Hour, true},
		{"", "tomorrow", 0, false},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.ms != "" {
			h.Set("retry-after-ms", c.ms)
		}
		if c.sec != "" {
			h.Set("retry-after", c.sec)
		}
		got, ok := openai.ParseRetryAfter(h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(ms %q, s %q) = %v, %v, want %v, %v", c.ms, c.sec, got, ok, c.want, c.ok)
		}
	}
}

func TestParseReset(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1s", time.Second, true},
		{"6m0s", 6 * time.Minute, true},
		{"20ms", 20 * time.Millisecond, true},
		{"17.28s", 17280 * time.Millisecond, true},
		{"1h2m3.5s", time.Hour + 2*time.Minute + 3500*time.Millisecond, true},
		{"0s", 0, true},
		{"60", time.Minute, true},
		{"1.5", 1500 * time.Millisecond, true},
		{" 2s ", 2 * time.Second, true},
		{"48h", 24 * time.Hour, true},
		{"", 0, false},
		{"-1s", 0, false},
		{"+1s", 0, false},
		{"soon", 0, false},
		{"1x", 0, false},
		{"-5", 0, false},
	}
	for _, c := range cases {
		got, ok := openai.ParseReset(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseReset(%q) = %v, %v, want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseRateLimit(t *testing.T) {
	h := http.Header{}
	if got := openai.ParseRateLimit(h); got != nil {
		t.Errorf("ParseRateLimit(no headers) = %+v, want nil", got)
	}
	h.Set("x-ratelimit-limit-requests", "60")
	h.Set("x-ratelimit-remaining-requests", "59")
	h.Set("x-ratelimit-reset-requests", "1s")
	h.Set("x-ratelimit-limit-tokens", "150000")
	h.Set("x-ratelimit-remaining-tokens", "149984")
	h.Set("x-ratelimit-reset-tokens", "6m0s")
	want := portico.RateLimit{
		Requests: portico.Quota{Known: true, Limit: 60, Remaining: 59, Reset: time.Second},
		Tokens:   portico.Quota{Known: true, Limit: 150000, Remaining: 149984, Reset: 6 * time.Minute},
	}
	if got := openai.ParseRateLimit(h); got == nil || *got != want {
		t.Errorf("ParseRateLimit = %+v, want %+v", got, want)
	}
	h.Set("x-ratelimit-remaining-tokens", "-3")
	h.Set("x-ratelimit-reset-requests", "later")
	want.Tokens = portico.Quota{}
	want.Requests.Reset = 0
	if got := openai.ParseRateLimit(h); got == nil || *got != want {
		t.Errorf("ParseRateLimit(bad tokens, bad reset) = %+v, want %+v", got, want)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "1500", "1.5", "-1", "Sun, 29 Nov 2026 12:00:10 GMT", "1e9", "99999999999999999999999", ".", "1..2"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ms, sec string) {
		h := http.Header{}
		h.Set("retry-after-ms", ms)
		h.Set("retry-after", sec)
		d, ok := openai.ParseRetryAfter(h, now)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v, want within [0, 24h]", ms, sec, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v, false; want 0 when not ok", ms, sec, d)
		}
		// A valid ms header always decides, whatever retry-after says.
		if dm, okm := openai.ParseRetryAfter(http.Header{"Retry-After-Ms": {ms}}, now); okm && (d != dm || !ok) {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v, want the ms value %v", ms, sec, d, dm)
		}
	})
}

func FuzzParseReset(f *testing.F) {
	for _, s := range []string{"1s", "6m0s", "20ms", "17.28s", "60", "-1s", "", "1h", "9999999999h", "0.000000001s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := openai.ParseReset(s)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("ParseReset(%q) = %v, want within [0, 24h]", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseReset(%q) = %v, false; want 0 when not ok", s, d)
		}
		if ok && strings.TrimSpace(s) == "" {
			t.Fatalf("ParseReset(%q) ok, want blank rejected", s)
		}
		// What the fake server formats, the parser reads back to the millisecond.
		if ok && d < 24*time.Hour {
			back, ok2 := openai.ParseReset(d.Round(time.Millisecond).String())
			if !ok2 || back != min(d.Round(time.Millisecond), 24*time.Hour) {
				t.Fatalf("ParseReset(%v.String()) = %v, %v; want it back", d, back, ok2)
			}
		}
	})
}
