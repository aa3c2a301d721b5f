package openai_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// TestPresetUpdate changes a stack's configuration twice at run time,
// over this adapter and fakeopenai:
//
//  1. routes b then a (a's limiter 10 requests a minute): b's 401 opens
//     its breaker at once, a answers the 7 requests (3 tokens left);
//  2. Update to b, a, c in a Weighted{1, 1, 2} split, a's limit tightened
//     to 5 a minute: b's breaker is the same and still open (no call), a's
//     limiter the same, and a answers 3 of 200 requests (its level, not a
//     new bucket's 5), c the rest;
//  3. Update to a, c in a Weighted{1, 3} split, a's limit raised to a
//     million: once its bucket refilled (a minute), a answers 250 ± 61.6
//     of 1,000 requests.
func TestPresetUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sa, a := provider(t, "p1", fakeopenai.ModelConfig{Name: "a"})
		sb, b := provider(t, "p2", fakeopenai.ModelConfig{Name: "b", Script: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 401}}})
		sc, c := provider(t, "p3", fakeopenai.ModelConfig{Name: "c"})
		limit := func(rpm int) []stack.Route {
			r := a[0]
			r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: rpm}}
			return []stack.Route{r}
		}
		s := preset(t, stack.Config{}, b, limit(10))
		answers := func(n int) map[string]int {
			by := map[string]int{}
			for range n {
				resp, err := s.Generate(t.Context(), userReq("", "hello"))
				if err != nil {
					t.Fatal(err)
				}
				by[resp.Route]++
			}
			return by
		}
		if by := answers(7); by["a"] != 7 || sb.Count("b") != 1 || s.Breaker("b").State() != breaker.Open {
			t.Fatalf("before the Update: answers %v, b called %d times, its breaker %v; want 7 by a after one call to b, open", by, sb.Count("b"), s.Breaker("b").State())
		}
		brk, lim := s.Breaker("b"), s.Limiter("a")

		cfg := stack.Config{Kind: stack.Weighted{1, 1, 2}}
		cfg.Routes = append(append(append(cfg.Routes, b...), limit(5)...), c...)
		if err := s.Update(cfg); err != nil {
			t.Fatal(err)
		}
		if s.Breaker("b") != brk || brk.State() != breaker.Open || s.Limiter("a") != lim {
			t.Fatalf("the Update replaced b's breaker (%v, %v) or a's limiter (%v)", s.Breaker("b") != brk, brk.State(), s.Limiter("a") != lim)
		}
		by := answers(200)
		t.Logf("after the Update: %v of 200; calls a %d, b %d, c %d", by, sa.Count("a"), sb.Count("b"), sc.Count("c"))
		if by["a"] != 3 || by["c"] != 197 || sb.Count("b") != 1 || sa.Count("a") != 10 {
			t.Errorf("after the Update: answers %v, calls a %d b %d; want 3 by a (its bucket's level), 197 by c, no call to b", by, sa.Count("a"), sb.Count("b"))
		}

		cfg = stack.Config{Kind: stack.Weighted{1, 3}}
		cfg.Routes = append(append(cfg.Routes, limit(1_000_000)...), c...)
		if err := s.Update(cfg); err != nil {
			t.Fatal(err)
		}
		// The raised limit keeps the bucket's level (3 tokens of a million:
		// a headroom of 3e-6 scales a's weight) until it refills.
		time.Sleep(time.Minute)
		const n = 1000
		by = answers(n)
		t.Logf("Weighted{1, 3} after the second Update: a %d, c %d of %d (bound 250 ± %.1f)", by["a"], by["c"], n, binom.Bound(n, 0.25))
		if !binom.Within(by["a"], n, 0.25) || s.Limiter("a") != lim || s.Breaker("b") != nil {
			t.Errorf("a answered %d of %d, want 250 ± %.1f; limiter kept %v, b gone %v", by["a"], n, binom.Bound(n, 0.25), s.Limiter("a") == lim, s.Breaker("b") == nil)
		}
	})
}
