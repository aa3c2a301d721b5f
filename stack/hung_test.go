package stack

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
)

// TestHungPrimaryTripsBreaker: through the whole preset stack (breaker,
// retry, validate per route), a primary that stalls runs out the group's
// share of each 20 s deadline (11.25 s, past the group's FaultAfter), its
// breaker counts those timeouts, opens after 5, and the primary is skipped
// for the rest of the 25 requests, all answered by the secondary.
func TestHungPrimaryTripsBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hung := modeltest.NewFake(modeltest.Outcome{Stall: true})
		healthy := modeltest.NewFake(modeltest.Answer("fine"))
		ra := route("a", hung)
		ra.Breaker = breaker.Config{Trip: breaker.ConsecutiveFailures(5)}
		s, err := New(Config{Routes: []Route{ra, route("b", healthy)}, Deadline: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 25 {
			resp, err := s.Generate(context.Background(), hello)
			if err != nil || resp.Route != "b" {
				t.Fatalf("request %d: Generate = %+v, %v; want b's answer", i, resp, err)
			}
		}
		if hung.Count() != 5 || healthy.Count() != 25 || s.Breaker("a").State() != breaker.Open {
			t.Errorf("primary calls %d, secondary calls %d, primary breaker %v; want 5, 25, open", hung.Count(), healthy.Count(), s.Breaker("a").State())
		}
	})
}
