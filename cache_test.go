package portico_test

import (
	"testing"

	"github.com/portico-llm/portico"
)

func TestCacheBreakpointsAndKey(t *testing.T) {
	sys := portico.Text(portico.RoleSystem, "rules")
	sys.Cache = portico.Cache1h
	user := portico.Message{Role: portico.RoleUser, Content: []portico.Part{{Kind: portico.PartText, Text: "a", Cache: portico.Cache5m}, {Kind: portico.PartText, Text: "b"}}}
	req := &portico.Request{Messages: []portico.Message{sys, user, portico.Text(portico.RoleUser, "c")}}
	if n := req.CacheBreakpoints(); n != 2 {
		t.Errorf("CacheBreakpoints() = %d, want 2", n)
	}
	if n := testing.AllocsPerRun(10, func() { req.CacheBreakpoints() }); n != 0 {
		t.Errorf("CacheBreakpoints allocates %v times, want 0", n)
	}
	for _, tc := range []struct {
		id, want string
	}{
		{"", ""},
		{"session-42", "s-92e76c732d82ec49fb40ff0bb444430c"}, // sha256sum's first 32 digits
	} {
		if got := (portico.Identity{SessionID: tc.id}).CacheKey(); got != tc.want {
			t.Errorf("CacheKey(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
	a, b := portico.Identity{SessionID: "session-42"}.CacheKey(), portico.Identity{SessionID: "session-43"}.CacheKey()
	if len(a) != 34 || a == b || a[:2] != "s-" {
		t.Errorf("CacheKey = %q and %q, want distinct s- and 32 hex digits", a, b)
	}
	for ttl, want := range map[portico.CacheTTL]string{portico.NoCache: "none", portico.Cache5m: "5m", portico.Cache1h: "1h", 9: "CacheTTL(9)"} {
		if got := ttl.String(); got != want {
			t.Errorf("CacheTTL(%d).String() = %q, want %q", ttl, got, want)
		}
	}
}
