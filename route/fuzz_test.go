package route

import (
	"strings"
	"testing"
)

// FuzzHeuristicScore checks the one-pass keyword scan against a plain search
// for each keyword, and that scores stay in (0, 1).
func FuzzHeuristicScore(f *testing.F) {
	for _, s := range []string{"", "Prove it STEP BY STEP?", "pprove derivederive ```x```", "optimiZe the algorithm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var found [len(heuristicKeywords)]bool
		got := countKeywords(s, &found, len(heuristicKeywords))
		low := strings.Map(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, s)
		want := 0
		for _, kw := range heuristicKeywords {
			if strings.Contains(low, kw) {
				want++
			}
		}
		if got != want {
			t.Errorf("countKeywords(%q) = %d, want %d", s, got, want)
		}
		if sc := HeuristicScore(userReq(s)); !(sc > 0 && sc < 1) {
			t.Errorf("HeuristicScore(%q) = %v, want in (0, 1)", s, sc)
		}
		// Blocks of the prompt end in increasing order at its length.
		bs := hashPrompt(userReq(s), 7, nil)
		prev := 0
		for _, b := range bs {
			if b.end <= prev || b.end-prev > 7 {
				t.Fatalf("block ends %v not increasing by at most 7", bs)
			}
			prev = b.end
		}
		if prev != len(s) {
			t.Errorf("last block end = %d, want %d", prev, len(s))
		}
	})
}
