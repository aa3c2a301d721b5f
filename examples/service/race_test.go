package main_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/stack"
)

// TestCancelMidRace: 15 tenants whose requests race on both routes (both
// stall; the group hedges each to Anthropic at 300 ms) cancel at 400 ms:
// each fails Canceled, and nothing is held against either route: breakers
// closed, throttles and concurrency limits untouched, and each hedge,
// sent, keeps the token it took from Anthropic's budget.
func TestCancelMidRace(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stall := fakeopenai.Fault{Kind: fakeopenai.FaultStallBeforeHeaders, Fraction: 1}
				s := newSvc(t, oaiModel(stall), antModel(stall), nil)
				o := &observer{n: map[string]int{}}
				var wg sync.WaitGroup
				for i := range 15 {
					wg.Go(func() {
						ctx, cancel := context.WithCancel(portico.ContextWithObserver(t.Context(), o))
						defer cancel()
						time.AfterFunc(400*time.Millisecond, cancel)
						r, _ := req(i, stream, false)
						if _, err := s.st.Generate(ctx, r); portico.ClassOf(err) != portico.Canceled {
							t.Errorf("request %d = %v, want Canceled", i, err)
						}
					})
				}
				wg.Wait()
				if got := fmt.Sprint(o.n); got != "map[hedge:anthropic:15]" {
					t.Errorf("events %s, want 15 hedges to anthropic", got)
				}
				if a, b := s.oai.Count(gpt), s.ant.Count(claude); a != 15 || b != 15 {
					t.Errorf("openai saw %d, anthropic %d; want 15 each", a, b)
				}
				for _, name := range []string{"openai", "anthropic"} {
					p, n, acc := s.st.Throttle(name).Probability()
					if st := s.st.Breaker(name).State().String(); st != "closed" || p != 0 || n != 0 || acc != 0 || s.concurrency(name).Limit() != 20 {
						t.Errorf("%s: breaker %s, throttle p=%v over %d requests, %d accepts, limit %d; want closed, nothing counted, 20",
							name, st, p, n, acc, s.concurrency(name).Limit())
					}
				}
				for i := range 15 {
					k := fmt.Sprintf("tenant-%03d", i)
					if a, b := s.st.Retrier("openai").BudgetLevel("openai", k), s.st.Retrier("anthropic").BudgetLevel("anthropic", k); a != 10 || b != 9 {
						t.Errorf("%s: budgets openai %v, anthropic %v; want 10 and 9 (its hedge)", k, a, b)
					}
				}
			})
		})
	}
}

// TestPanicInRace: a user's ModelMiddleware on Anthropic panics for one
// tenant, in the hedge the group sent while OpenAI stalls for a second:
// the panic reaches that caller once OpenAI's attempt was canceled, and
// the other nine requests are answered by the hedge as before.
func TestPanicInRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSvc(t, oaiModel(fakeopenai.Fault{Kind: fakeopenai.FaultStallBeforeHeaders, Stall: time.Second, Fraction: 1}), antModel(), func(c *stack.Config) {
			c.Routes[1].ModelMiddleware = []portico.Middleware{func(next portico.Model) portico.Model {
				return portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
					if r.Identity.ClientKey == "tenant-666" {
						panic("boom")
					}
					return next.Generate(ctx, r)
				})
			}}
		})
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				tenant := 100 + i
				if i == 0 {
					tenant = 666
				}
				start := time.Now()
				defer func() {
					if p := recover(); (i == 0) != (p == "boom") {
						t.Errorf("request %d recovered %v", i, p)
					}
					if i == 0 && time.Since(start) != 300*time.Millisecond {
						t.Errorf("the panic reached its caller after %v, want 300ms (the hedge's)", time.Since(start))
					}
				}()
				r, _ := req(tenant, i%2 == 1, false)
				if resp, err := s.st.Generate(t.Context(), r); err != nil || resp.Route != "anthropic" {
					t.Errorf("request %d = %v, want anthropic's answer", i, err)
				}
			})
		}
		wg.Wait()
		if a, b := s.oai.Count(gpt), s.ant.Count(claude); a != 10 || b != 9 {
			t.Errorf("openai saw %d, anthropic %d; want 10 and 9 (the panic before the call)", a, b)
		}
		if st := s.st.Breaker("openai").State().String(); st != "closed" {
			t.Errorf("openai's breaker %s, want closed (its attempts lost, canceled)", st)
		}
	})
}
