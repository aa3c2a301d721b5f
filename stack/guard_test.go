package stack

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/guard"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/respcache"
)

// TestPresetGuardBeforeEverything: through New, guardrails run before the
// cache, the client limit and the routes. A tenant allowed one request a
// minute is refused 10 times by a deny-list and 10 times by a fail-closed
// moderation check that errs: no route is called, no breaker counts a
// failure, the cache is not consulted and the client's one request is
// still there for a clean question, answered.
func TestPresetGuardBeforeEverything(t *testing.T) {
	a, b := modeltest.NewFake(modeltest.Answer("a")), modeltest.NewFake(modeltest.Answer("b"))
	var moderationDown bool
	s, err := New(Config{Routes: []Route{route("a", a), route("b", b)}, Cache: &respcache.Config{},
		Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: time.Minute}},
		Guard: &guard.Config{Guardrails: []guard.Guardrail{
			{Name: "deny", Check: guard.Pattern("secret", regexp.MustCompile(`secret`))},
			{Name: "moderation", Check: func(context.Context, *portico.Request) error {
				if moderationDown {
					return errors.New("moderation: 503")
				}
				return nil
			}},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(q string) (*portico.Response, error) {
		return s.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, q)},
			MaxOutputTokens: 16, Identity: portico.Identity{ClientKey: "t"}})
	}
	for range 10 {
		if _, err := ask("the secret"); portico.ClassOf(err) != portico.Permanent || !errors.Is(err, guard.ErrRefused) {
			t.Fatalf("a denied request = %v, want Permanent, guard.ErrRefused", err)
		}
	}
	moderationDown = true
	for range 10 {
		if _, err := ask("hello"); portico.ClassOf(err) != portico.Rejected || !errors.Is(err, guard.ErrCheckFailed) {
			t.Fatalf("with moderation down = %v, want Rejected, guard.ErrCheckFailed", err)
		}
	}
	moderationDown = false
	if a.Count()+b.Count() != 0 || s.Cache().Stats() != (respcache.Stats{}) {
		t.Errorf("after 20 refusals: route calls %d, cache %+v; want 0, none", a.Count()+b.Count(), s.Cache().Stats())
	}
	for _, r := range []string{"a", "b"} {
		if st := s.Breaker(r).State(); st != breaker.Closed {
			t.Errorf("breaker %s = %v, want closed", r, st)
		}
	}
	if resp, err := ask("hello"); err != nil || resp.Text != "a" {
		t.Errorf("a clean request = %v, %v, want a's answer within the client's one request", resp, err)
	}
}
