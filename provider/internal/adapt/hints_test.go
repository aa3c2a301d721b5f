package adapt

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{" 1.5 ", 1500 * time.Millisecond, true},
		{"0", 0, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true}, // in the past
		{"Tue, 01 Mar 2027 12:00:00 GMT", MaxHint, true},
		{"99999999999", MaxHint, true},
		{"", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {"1e3", 0, false}, {"0x10", 0, false},
		{"NaN", 0, false}, {"Inf", 0, false}, {".5", 0, false}, {"1.2.3", 0, false}, {"soon", 0, false},
	} {
		got, ok := RetryAfter(c.v, now)
		if got != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

func TestNumber(t *testing.T) {
	if d, ok := Number("250", time.Millisecond); d != 250*time.Millisecond || !ok {
		t.Errorf("Number(250 ms) = %v, %v; want 250ms", d, ok)
	}
	if d, ok := Number("1e400", time.Second); ok {
		t.Errorf("Number(1e400) = %v, true; want false", d)
	}
}

func TestHeader(t *testing.T) {
	h := http.Header{"Retry-After": {"3", "4"}}
	if Header(h, "Retry-After") != "3" || Header(h, "retry-after") != "" || Header(nil, "Retry-After") != "" {
		t.Errorf("Header: want the first value of the canonical key only")
	}
	if n := testing.AllocsPerRun(100, func() { _ = Header(h, "X-Absent") }); n != 0 {
		t.Errorf("Header allocates %v times, want 0", n)
	}
}

// FuzzRetryAfter: any value parses to a wait within [0, MaxHint], and a
// plain number of seconds parses whatever white space surrounds it.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "1.5", " 7 ", "Sun, 01 Mar 2026 12:00:30 GMT", "-1", "1e9", "NaN", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := RetryAfter(v, now)
		if d < 0 || d > MaxHint || !ok && d != 0 {
			t.Fatalf("RetryAfter(%q) = %v, %v; want within [0, %v], 0 when not ok", v, d, ok, MaxHint)
		}
		if n, ok := Number(v, time.Second); ok {
			if d2, ok2 := RetryAfter(" "+strings.TrimSpace(v)+"\t", now); !ok2 || d2 != n {
				t.Fatalf("RetryAfter(%q padded) = %v, %v; want %v", v, d2, ok2, n)
			}
		}
	})
}
