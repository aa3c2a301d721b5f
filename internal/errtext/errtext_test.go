package errtext

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Parts splits at every ": " and "; ", whichever comes first, and keeps
// each separator with the part after it.
func TestParts(t *testing.T) {
	got := Parts("ratelimit: wait; canceled: context canceled")
	want := []Part{{"", "ratelimit"}, {": ", "wait"}, {"; ", "canceled"}, {": ", "context canceled"}}
	if !slices.Equal(got, want) {
		t.Errorf("Parts = %q, want %q", got, want)
	}
	if got := Parts("no separator"); !slices.Equal(got, []Part{{"", "no separator"}}) {
		t.Errorf("Parts of one part = %q", got)
	}
}

// Said finds a part's words side by side in the text, without case or
// punctuation, and never a part without words or half a word.
func TestSaid(t *testing.T) {
	for _, c := range []struct {
		text, part string
		want       bool
	}{
		{"portico: rate_limited status 429", "rate limited", true},
		{"portico: rate_limited status 429", "Status 429", true},
		{"portico: rate_limited status 429", "limited status", true},
		{"portico: rate_limited status 429", "ate", false},
		{"portico: rate_limited status 429", "rate status", false},
		{"portico: rate_limited", "", false},
		{"portico: rate_limited", ": ", false},
		{"", "rate", false},
	} {
		if got := Said(c.text, c.part); got != c.want {
			t.Errorf("Said(%q, %q) = %v, want %v", c.text, c.part, got, c.want)
		}
	}
}

// IsName holds for one lower-case ASCII identifier only.
func TestIsName(t *testing.T) {
	for s, want := range map[string]bool{"ratelimit": true, "s3": true, "": false, "Rate": false, "rate limit": false, "café": false, "rate_limit": false} {
		if got := IsName(s); got != want {
			t.Errorf("IsName(%q) = %v, want %v", s, got, want)
		}
	}
}

// Repeated names the first part that says again what came before it; a
// package's name before ": " is never one.
func TestRepeated(t *testing.T) {
	for msg, want := range map[string]string{
		"portico: timeout: retry: timeout":           "timeout",
		"retry: attempt 2; retry: attempt 3":         "",
		"portico: deadline: ratelimit: deadline hit": "",
		"portico: rate limited: rate limited":        "rate limited",
	} {
		if got := Repeated(msg); got != want {
			t.Errorf("Repeated(%q) = %q, want %q", msg, got, want)
		}
	}
}
