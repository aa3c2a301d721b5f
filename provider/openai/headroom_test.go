package openai_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/internal/binom"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// TestPoolHeadroom: a pool of two keys of equal weight, each limiter
// configured at 20,000 tokens a minute; key a's server announces (and
// enforces) 2,000, key b's 1,000,000, in x-ratelimit headers. Once a's
// headers have lowered its limiter's level, a's headroom is about a
// tenth of b's, and the split sends it about a tenth of the traffic
// instead of half, before any 429: over 1,000 requests in 10 s
// (virtual time) a's share is within the binomial bound of the mean of
// h_a/(h_a+h_b) read from the limiters before each request, far below
// 0.5, and neither server answers 429.
func TestPoolHeadroom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var on atomic.Bool
		on.Store(true)
		var throttled atomic.Int64
		fa, a := poolKey(t, "a", "sk-a-secret", &on, fakeopenai.ModelConfig{OutputTokens: 4, RateLimit: &fakeopenai.RateLimit{Tokens: 2000, Enforce: true}}, &throttled)
		fb, b := poolKey(t, "b", "sk-b-secret", &on, fakeopenai.ModelConfig{OutputTokens: 4, RateLimit: &fakeopenai.RateLimit{Tokens: 1000000, Enforce: true}}, &throttled)
		r := poolRoute
		r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Tokens: 20000}}
		routes, g, err := stack.Pool("gpt", r, a, b)
		if err != nil {
			t.Fatal(err)
		}
		s, err := stack.New(stack.Config{Routes: routes, Groups: []stack.Group{g}})
		if err != nil {
			t.Fatal(err)
		}
		const n = 1000
		sum, last := 0.0, 0.0
		for range n {
			req := userReq("", "hello")
			req.MaxOutputTokens = 16
			rq := *req
			rq.Model = "m"
			ha, hb := s.Limiter("gpt/a").Headroom(&rq), s.Limiter("gpt/b").Headroom(&rq)
			last = ha / (ha + hb)
			sum += last
			if _, err := s.Generate(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		p := sum / n
		got := fa.Count("m")
		t.Logf("a:b = %d:%d of %d; mean expected share of a %.4f (bound %.1f), last %.4f; 429s %d",
			got, fb.Count("m"), n, p, binom.Bound(n, p), last, throttled.Load())
		if got+fb.Count("m") != n || throttled.Load() != 0 {
			t.Errorf("servers saw %d+%d requests with %d 429s; want %d, none refused", got, fb.Count("m"), throttled.Load(), n)
		}
		if !binom.Within(got, n, p) || p > 0.15 {
			t.Errorf("a got %d of %d; want %.1f ± %.1f (mean expected share %.4f, want <= 0.15)", got, n, n*p, binom.Bound(n, p), p)
		}
	})
}
