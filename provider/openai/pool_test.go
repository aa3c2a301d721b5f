package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// These tests run a key pool (stack.Pool) through the preset over this
// adapter, one in-memory fakeopenai server per key, each adapter holding
// its own API key, in virtual time.

// poolKey serves key label over its own fake, through a handler that
// answers with storm's fake while *on is set and with a healthy one
// otherwise, and returns the fake that counts its requests and the key;
// *throttled counts its 429s when non-nil.
func poolKey(t *testing.T, label, secret string, on *atomic.Bool, storm fakeopenai.ModelConfig, throttled ...*atomic.Int64) (*fakeopenai.Server, stack.Key) {
	t.Helper()
	healthy, err := fakeopenai.New(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: "m", OutputTokens: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	storm.Name = "m"
	stormy, err := fakeopenai.New(fakeopenai.Config{Models: []fakeopenai.ModelConfig{storm}})
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "wrong key", http.StatusTeapot)
			return
		}
		if on != nil && on.Load() {
			if len(throttled) > 0 {
				w = &statusCounter{ResponseWriter: w, n429: throttled[0]}
			}
			stormy.Handler().ServeHTTP(w, r)
			return
		}
		healthy.Handler().ServeHTTP(w, r)
	})
	s, m := startPipe(t, fakeopenai.Config{Handler: h}, option.WithAPIKey(secret))
	return s, stack.Key{Label: label, Model: m}
}

// statusCounter counts the 429s written through it.
type statusCounter struct {
	http.ResponseWriter
	n429 *atomic.Int64
}

func (s *statusCounter) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		s.n429.Add(1)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusCounter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

var poolRoute = stack.Route{Route: portico.Route{ModelName: "m", Capabilities: portico.Capabilities{Provider: "openai"}}}

// TestPoolStorm: a pool of three keys, one request every 50 ms for 30 s
// (virtual time), key b answering every call with 429 and retry-after: 2
// from 10 s to 20 s. Before the storm the requests spread over the three
// keys; during it b is called once per Retry-After (each 429 moving its
// request on to another key at once, no request failing) and skipped
// while it cools down; after it b takes its share again. No secret
// reaches a hop, a route name or an error.
func TestPoolStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var storm atomic.Bool
		secrets := []string{"sk-a-secret", "sk-b-secret", "sk-c-secret"}
		var fakes []*fakeopenai.Server
		var keys []stack.Key
		for i, l := range []string{"a", "b", "c"} {
			var on *atomic.Bool
			if l == "b" {
				on = &storm
			}
			f, k := poolKey(t, l, secrets[i], on, fakeopenai.ModelConfig{Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfter: 2 * time.Second, Fraction: 1}}})
			fakes, keys = append(fakes, f), append(keys, k)
		}
		routes, g, err := stack.Pool("gpt", poolRoute, keys...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := stack.New(stack.Config{Routes: routes, Groups: []stack.Group{g}})
		if err != nil {
			t.Fatal(err)
		}
		type phase struct {
			calls, answers [3]int
			moved, failed  int
		}
		var ph [3]phase
		idx := map[string]int{"gpt/a": 0, "gpt/b": 1, "gpt/c": 2}
		for i := range 600 {
			p := &ph[i/200]
			storm.Store(i/200 == 1)
			before := [3]int{fakes[0].Count("m"), fakes[1].Count("m"), fakes[2].Count("m")}
			resp, err := s.Generate(t.Context(), userReq("gpt", "hello"))
			for k := range 3 {
				p.calls[k] += fakes[k].Count("m") - before[k]
			}
			if err != nil {
				p.failed++
				continue
			}
			p.answers[idx[resp.Route]]++
			for _, h := range resp.Hops {
				if h.Err != nil {
					p.moved++
				}
				for _, sec := range secrets {
					if strings.Contains(h.Route+h.Reason+fmt.Sprint(h.Err), sec) {
						t.Errorf("hop %+v carries a secret", h)
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		for i, name := range []string{"before", "storm", "after"} {
			p := ph[i]
			t.Logf("%-6s calls a:b:c %d:%d:%d, answers %d:%d:%d, moved on %d, failed %d", name,
				p.calls[0], p.calls[1], p.calls[2], p.answers[0], p.answers[1], p.answers[2], p.moved, p.failed)
			if p.failed != 0 || p.answers[0]+p.answers[1]+p.answers[2] != 200 {
				t.Errorf("%s: %d failed, %v answered; want every request answered", name, p.failed, p.answers)
			}
		}
		// During the storm b is called once per 2 s cooldown: 5 calls in
		// its 10 s, each moved on, none answered.
		if st := ph[1]; st.calls[1] != 5 || st.moved != 5 || st.answers[1] != 0 {
			t.Errorf("storm: b called %d times, %d moved on, %d answered; want 5, 5, 0", st.calls[1], st.moved, st.answers[1])
		}
		for _, i := range []int{0, 2} {
			if p := ph[i]; p.moved != 0 || p.answers[1] < 40 || p.answers[0] < 40 || p.answers[2] < 40 {
				t.Errorf("phase %d: answers %v, %d moved on; want a spread over a, b, c and no move", i, p.answers, p.moved)
			}
		}
	})
}

// TestPoolUnusableKey: a key that answers 401 opens its own breaker at
// once and is no longer called, its request answered by another key; a
// pool whose every key is cooling down fails RateLimited with the
// earliest Retry-After of its keys, naming each key by its label only.
func TestPoolUnusableKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var on atomic.Bool
		on.Store(true)
		fa, a := poolKey(t, "a", "sk-a-secret", &on, fakeopenai.ModelConfig{Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 401, Fraction: 1}}})
		_, b := poolKey(t, "b", "sk-b-secret", nil, fakeopenai.ModelConfig{})
		routes, g, err := stack.Pool("gpt", poolRoute, a, b)
		if err != nil {
			t.Fatal(err)
		}
		s, err := stack.New(stack.Config{Routes: routes, Groups: []stack.Group{g}})
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			resp, err := s.Generate(t.Context(), userReq("", "hello"))
			if err != nil || resp.Route != "gpt/b" {
				t.Fatalf("Generate = %v, %v; want gpt/b's answer", resp, err)
			}
		}
		if fa.Count("m") != 1 || s.Breaker("gpt/a").State() != breaker.Open {
			t.Errorf("a called %d times, breaker %v; want 1 and open", fa.Count("m"), s.Breaker("gpt/a").State())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var on atomic.Bool
		on.Store(true)
		_, a := poolKey(t, "a", "sk-a-secret", &on, fakeopenai.ModelConfig{Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfter: 7 * time.Second, Fraction: 1}}})
		_, b := poolKey(t, "b", "sk-b-secret", &on, fakeopenai.ModelConfig{Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 429, RetryAfter: 3 * time.Second, Fraction: 1}}})
		a.Weight = 3
		routes, g, err := stack.Pool("gpt", poolRoute, a, b)
		if err != nil {
			t.Fatal(err)
		}
		s, err := stack.New(stack.Config{Routes: routes, Groups: []stack.Group{g}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			_, err := s.Generate(ctx, userReq("", "hello"))
			cancel()
			var pe *portico.Error
			var ex *fallback.Exhausted
			if !errors.As(err, &pe) || pe.Class != portico.RateLimited || pe.RetryAfter != 3*time.Second || !errors.As(err, &ex) {
				t.Fatalf("request %d: %v; want RateLimited, RetryAfter 3s, every key listed", i, err)
			}
			t.Logf("request %d: %v (RetryAfter %v)", i, err, pe.RetryAfter)
			if want := "portico: rate_limited by cooldown retry-after 3s: fallback: no route can serve the request: gpt/a (cooldown), gpt/b (cooldown)"; i == 1 && err.Error() != want {
				t.Errorf("request 1, every key cooling: %q, want %q", err, want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q carries a secret", err)
			}
		}
	})
}

// TestPoolLearnsKeyLimits: each key's limiter learns its own key's
// limits from its x-ratelimit headers. Key a's server allows 5 requests
// a minute and answers a 6th with 429, key b's 1,000; each key's limiter
// is configured at 1,000, and a weighs 1,000 to b's 1 (so that, weighed
// by its headroom, remaining/1,000, a still draws at least half the
// requests until none remain). Over 60 requests in 6 s (virtual time), a's
// server sees 5 requests and no 429 (its limiter holds it once the
// headers say none remain, and the pool moves on to b); without
// limiters it sees a 6th, answered 429. Every request is answered.
func TestPoolLearnsKeyLimits(t *testing.T) {
	for _, limited := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			var on atomic.Bool
			on.Store(true)
			var throttled atomic.Int64
			fa, a := poolKey(t, "a", "sk-a-secret", &on, fakeopenai.ModelConfig{OutputTokens: 4, RateLimit: &fakeopenai.RateLimit{Requests: 5, Enforce: true}}, &throttled)
			fb, b := poolKey(t, "b", "sk-b-secret", &on, fakeopenai.ModelConfig{OutputTokens: 4, RateLimit: &fakeopenai.RateLimit{Requests: 1000, Enforce: true}})
			a.Weight = 1000
			r := poolRoute
			if limited {
				r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1000}}
			}
			routes, g, err := stack.Pool("gpt", r, a, b)
			if err != nil {
				t.Fatal(err)
			}
			s, err := stack.New(stack.Config{Routes: routes, Groups: []stack.Group{g}})
			if err != nil {
				t.Fatal(err)
			}
			for range 60 {
				if _, err := s.Generate(t.Context(), userReq("", "hello")); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			refused := int(throttled.Load())
			t.Logf("limiters %v: key a's server saw %d requests (%d answered 429), b's %d", limited, fa.Count("m"), refused, fb.Count("m"))
			want, wantRefused := 5, 0
			if !limited {
				want, wantRefused = 6, 1
			}
			if fa.Count("m") != want || refused != wantRefused || fa.Count("m")-refused+fb.Count("m") != 60 {
				t.Errorf("limiters %v: a saw %d (%d 429), b %d; want %d (%d 429) and 60 answered", limited, fa.Count("m"), refused, fb.Count("m"), want, wantRefused)
			}
		})
	}
}
