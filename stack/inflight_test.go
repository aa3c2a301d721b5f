package stack

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/inflight"
	"github.com/portico-llm/portico/modeltest"
)

// TestPresetInFlightAcrossStacks: two stacks (two instances) over one
// lease store, tenant cap 1: while one stack's call runs, the other's is
// refused, ClientLimit and nothing sent; another tenant is not.
func TestPresetInFlightAcrossStacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := &inflight.Memory{}
		build := func() (*Stack, *modeltest.Fake) {
			f := modeltest.NewFake(modeltest.Outcome{Response: modeltest.Answer("a").Response, Latency: time.Second})
			s, err := New(Config{Routes: []Route{route("r", f)},
				InFlight: &inflight.Config{Max: 1, Shared: portico.Shared[inflight.Store]{Store: mem}}})
			if err != nil {
				t.Fatal(err)
			}
			return s, f
		}
		a, _ := build()
		b, fb := build()
		ask := func(s *Stack, tenant string) error {
			_, err := s.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")},
				Identity: portico.Identity{ClientKey: tenant}})
			return err
		}
		done := make(chan error)
		go func() { done <- ask(a, "t") }()
		synctest.Wait()
		if err := ask(b, "t"); !errors.Is(err, inflight.ErrFull) || portico.RefuserOf(err) != portico.ClientLimit || fb.Count() != 0 {
			t.Errorf("b's call for t = %v (route calls %d), want ErrFull by client_limit, no call", err, fb.Count())
		}
		if err := ask(b, "u"); err != nil {
			t.Errorf("b's call for u = %v", err)
		}
		if err := <-done; err != nil || ask(b, "t") != nil {
			t.Errorf("a's call %v; b's for t after it should pass", err)
		}
		if mem.InFlight("inflight", "t") != 0 || b.InFlight() == nil {
			t.Errorf("leases left %d", mem.InFlight("inflight", "t"))
		}
	})
}
