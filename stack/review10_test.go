package stack_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/stack"
)

// Config.Hedge with one route hedges to that route, as its doc says,
// whether or not the route continues its own broken streams (with
// Capabilities.Continuation the stack calls it through a group).
func TestConfigHedgeOneContinuingRoute(t *testing.T) {
	for _, cont := range []portico.Continuation{portico.ContinueNone, portico.ContinuePrefill} {
		synctest.Test(t, func(t *testing.T) {
			fake := modeltest.NewFake(
				modeltest.Outcome{Response: modeltest.Answer("slow").Response, Latency: 10 * time.Second},
				modeltest.Outcome{Response: modeltest.Answer("fast").Response, Latency: time.Second})
			s, err := stack.New(stack.Config{
				Routes: []stack.Route{{Route: portico.Route{Name: "a", Model: fake, Capabilities: portico.Capabilities{Continuation: cont}}}},
				Hedge:  &hedge.Config{Delay: 100 * time.Millisecond},
			})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello")}, MaxOutputTokens: 16}
			resp, err := s.Generate(context.Background(), r)
			if err != nil || resp.Text != "fast" || time.Since(start) != 1100*time.Millisecond || fake.Count() != 2 {
				t.Errorf("continuation %v: Generate = %v, %v after %v with %d calls, want the hedge's answer after 1.1s, 2 calls",
					cont, resp, err, time.Since(start), fake.Count())
			}
		})
	}
}
