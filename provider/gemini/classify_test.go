package gemini

import (
	"fmt"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

func TestClassifyStatus(t *testing.T) {
	cases := []struct {
		code             int
		rpc, reason, msg string
		quota            []string
		want             portico.Class
	}{
		{429, "RESOURCE_EXHAUSTED", "", "", []string{"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}, portico.RateLimited},
		{429, "RESOURCE_EXHAUSTED", "", "", []string{"GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}, portico.Unusable},
		{0, "RESOURCE_EXHAUSTED", "", "", nil, portico.RateLimited},
		{400, "INVALID_ARGUMENT", "", "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).", nil, portico.Incompatible},
		{400, "INVALID_ARGUMENT", "", "The input token count exceeds the maximum number of tokens allowed (1048576).", nil, portico.Incompatible},
		{400, "INVALID_ARGUMENT", "", "Unable to submit request because the input token count is 1234 but model only supports up to 1000. Reduce the input token count and try again.", nil, portico.Incompatible},
		{400, "INVALID_ARGUMENT", "", "Request contains an invalid argument.", nil, portico.Incompatible},
		{400, "INVALID_ARGUMENT", "API_KEY_INVALID", "API key not valid. Please pass a valid API key.", nil, portico.Unusable},
		{400, "FAILED_PRECONDITION", "", "User location is not supported for the API use.", nil, portico.Unusable},
		{401, "UNAUTHENTICATED", "", "", nil, portico.Unusable},
		{403, "PERMISSION_DENIED", "", "", nil, portico.Unusable},
		{404, "NOT_FOUND", "", "", nil, portico.Unusable},
		{0, "NOT_FOUND", "", "", nil, portico.Unusable},
		{408, "", "", "", nil, portico.Transient},
		{409, "ABORTED", "", "", nil, portico.Transient},
		{500, "INTERNAL", "", "", nil, portico.Transient},
		{503, "UNAVAILABLE", "", "", nil, portico.Transient},
		{504, "DEADLINE_EXCEEDED", "", "", nil, portico.Transient},
		{0, "DEADLINE_EXCEEDED", "", "", nil, portico.Transient},
		{422, "", "", "", nil, portico.Incompatible},
		{499, "CANCELLED", "", "", nil, portico.Incompatible},
		{0, "", "", "", nil, portico.Incompatible},
	}
	for _, c := range cases {
		if got, _ := classifyStatus(c.code, c.rpc, c.reason, c.msg, c.quota); got != c.want {
			t.Errorf("classifyStatus(%d, %q, %q, %q, %v) = %v, want %v", c.code, c.rpc, c.reason, c.msg, c.quota, got, c.want)
		}
	}
}

func TestParseRetryDelay(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"37s", 37 * time.Second, true},
		{"0s", 0, true},
		{"58.934310785s", 58934310785 * time.Nanosecond, true},
		{"2.500s", 2500 * time.Millisecond, true},
		{"0.5s", 500 * time.Millisecond, true},
		{"1.000001s", time.Second + time.Microsecond, true},
		{"86400s", 24 * time.Hour, true},
		{"315576000000s", 24 * time.Hour, true},
		{"99999999999999999999999s", 24 * time.Hour, true},
		{"", 0, false}, {"s", 0, false}, {"37", 0, false}, {"-1s", 0, false}, {"+1s", 0, false},
		{"1.s", 0, false}, {".5s", 0, false}, {"1.0000000001s", 0, false}, {" 1s", 0, false},
		{"1e3s", 0, false}, {"1ms", 0, false}, {"1.5.5s", 0, false}, {"NaNs", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseRetryDelay(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryDelay(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseRetryDelay("58.934310785s") }); n != 0 {
		t.Errorf("ParseRetryDelay allocates %v times, want 0", n)
	}
}

func FuzzParseRetryDelay(f *testing.F) {
	for _, s := range []string{"37s", "58.934310785s", "0.5s", "-1s", "1.s", "", "86400s", "1.0000000001s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseRetryDelay(s)
		if !ok {
			if d != 0 {
				t.Fatalf("ParseRetryDelay(%q) = %v, false; want 0 when not ok", s, d)
			}
			return
		}
		if d < 0 || d > adapt.MaxHint {
			t.Fatalf("ParseRetryDelay(%q) = %v, outside [0, 24h]", s, d)
		}
		// Every accepted value reads back: whole seconds and nine digits of
		// nanoseconds format to a string that parses to the same duration.
		if d < adapt.MaxHint {
			secs, nanos := int64(d/time.Second), int64(d%time.Second)
			back := formatSeconds(secs, nanos)
			if d2, ok := ParseRetryDelay(back); !ok || d2 != d {
				t.Fatalf("ParseRetryDelay(%q) = %v, but its format %q parses to %v, %v", s, d, back, d2, ok)
			}
		}
	})
}

func formatSeconds(secs, nanos int64) string {
	return fmt.Sprintf("%d.%09ds", secs, nanos)
}

func TestCallIDRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		i   int
		id  string
		sig []byte
		enc string
	}{
		{0, "fc-1", nil, "fc-1"},
		{0, "", nil, "gemini_call_0"},
		{2, "", nil, "gemini_call_2"},
		{1, "gemini-call:x", nil, "gemini-call:1::gemini-call:x"},
		{1, "gemini_call_7", nil, "gemini-call:1::gemini_call_7"},
	} {
		got := encodeCallID(tc.i, tc.id)
		id, sig := decodeCallID(got)
		if got != tc.enc || id != tc.id || string(sig) != string(tc.sig) {
			t.Errorf("encodeCallID(%d, %q, %x) = %q decoding to %q %x; want %q", tc.i, tc.id, tc.sig, got, id, sig, tc.enc)
		}
	}
	// An ID of an earlier version, with the signature in it, still decodes.
	if id, sig := decodeCallID("gemini-call:0::"); id != "" || sig != nil {
		t.Errorf("decodeCallID(an ID of an earlier version) = %q %x, want none", id, sig)
	}
	if id, sig := decodeCallID("gemini-call:0:_wBz:fc:with:colons"); id != "fc:with:colons" || string(sig) != "\xff\x00s" {
		t.Errorf("decodeCallID(an ID with a signature) = %q %x, want fc:with:colons ff0073", id, sig)
	}
	for _, s := range []string{"call_abc", "gemini-call:", "gemini-call:0", "gemini-call:0:!!:x", "gemini_call_", "gemini_call_x"} {
		id, sig := decodeCallID(s)
		if want := s; s == "gemini-call:0:!!:x" {
			if id != "x" || sig != nil {
				t.Errorf("decodeCallID(%q) = %q %x, want x and no signature", s, id, sig)
			}
		} else if id != want || sig != nil {
			t.Errorf("decodeCallID(%q) = %q %x, want it unchanged", s, id, sig)
		}
	}
}
