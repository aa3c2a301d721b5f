package stack

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
)

// TestEmptyAnswersForEveryoneOpenTheBreaker: route a is broken for every
// tenant (it answers 200 with no text, as a deployment whose gateway drops
// the body does), route b is healthy. validate rejects a's answers as
// RuleEmptyText: not what one request asked of its answer (a schema, a
// Check) but the route failing everyone, a route fault its breaker must
// count. Every Rejection matches portico.ErrAnswerRefused, which the
// breaker ignores: after 20 requests a's breaker is still closed and each
// request still pays a's call and its retries before reaching b.
func TestEmptyAnswersForEveryoneOpenTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		empty := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "", FinishReason: portico.FinishStop}})
		a := route("a", empty)
		a.Breaker = breaker.Config{Trip: breaker.ConsecutiveFailures(5)}
		s, err := New(Config{Routes: []Route{a, route("b", modeltest.NewFake(modeltest.Answer("fine")))}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if resp, err := s.Generate(context.Background(), hello); err != nil || resp.Route != "b" {
				t.Fatalf("request %d = %+v, %v; want b's answer", i, resp, err)
			}
		}
		if st := s.Breaker("a").State(); st != breaker.Open {
			t.Errorf("a's breaker after 20 requests its empty answers failed = %v, want open (a called %d times)", st, empty.Count())
		}
	})
}
